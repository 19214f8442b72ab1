// `wsctl form create --company <id> --file form.json` and
// `wsctl form update <id> --file form.json`: forms are read-only in the REST
// API (contract, Form). The file has the shape of the Form read plus
// `post_actions` (docs/forms.md, examples/form.json); the server validates it
// (api/admin/forms.ts) and a problem comes back as one message naming each path.
import type { Command } from 'commander';
import { action } from '../action.ts';
import { downloadFile } from '../download.ts';
import { readJsonObject } from '../options.ts';
import { details } from '../output.ts';

/**
 * Said on stderr (never in the --json document on stdout) whenever a form
 * file sends its email to the address a submitter types: an operator must
 * turn that on knowingly.
 */
const SUBMITTER_WARNING =
  'warning: post_actions.email.send_to_submitter is on: this form emails whatever address a visitor types. ' +
  'Copies to one address are capped at 3 a day and 20 a form per hour, and their subject carries only the form title (docs/forms.md).';

async function readForm(file: string): Promise<Record<string, any>> {
  const form = await readJsonObject(file);
  if ((form as any)?.post_actions?.email?.send_to_submitter === true) process.stderr.write(`${SUBMITTER_WARNING}\n`);
  return form;
}

function formDetails(form: Record<string, any>): string {
  return details([
    ['id', form.id],
    ['slug', form.slug],
    ['name', form.name],
    ['locales', `${(form.locales ?? []).join(', ')} (default ${form.default_locale})`],
    ['active', form.active],
    ['fields', (form.fields ?? []).map((f: any) => `${f.key}:${f.field_type}`).join(' ')],
    ['submissions', form.submissions_count],
  ]);
}

export function registerFormCommands(program: Command): void {
  const form = program.command('form').description('create and replace forms (read-only in the REST API)');

  form
    .command('create')
    .description('create a form from a JSON file (see examples/form.json)')
    .requiredOption('--company <id>', 'company id')
    .requiredOption('--file <path>', 'JSON file with the form and its post_actions')
    .action(
      action(
        async ({ api, opts }) => api.form.create.mutate({ companyId: opts.company, form: await readForm(opts.file) }),
        (created) => formDetails(created as Record<string, any>),
      ),
    );

  form
    .command('update')
    .description('replace the definition of a form with the file')
    .argument('<id>', 'form id')
    .requiredOption('--file <path>', 'JSON file with the form and its post_actions')
    .action(
      action(
        async ({ api, args, opts }) => api.form.update.mutate({ id: args[0]!, form: await readForm(opts.file) }),
        (updated) => formDetails(updated as Record<string, any>),
      ),
    );

  form
    .command('download')
    .description("save a file a submission stored (its files[].asset_id): what an email could not attach stays only here")
    .argument('<asset_id>', "the file's asset_id, from the submission's files")
    .requiredOption('--company <id>', 'company id')
    .requiredOption('--out <path>', 'where to save it (an existing file is not overwritten)')
    .action(
      action(
        async ({ args, opts, endpoint }) => downloadFile(endpoint, opts.company, args[0]!, opts.out),
        (saved) => `saved ${saved.path} (${saved.size_bytes} bytes, ${saved.content_type})`,
      ),
    );
}
