// `wsctl form create --company <id> --file form.json` and
// `wsctl form update <id> --file form.json` (DESIGN.md, CLI contract). The
// file has the shape of the Form read plus `post_actions` (docs/forms.md,
// examples/form.json); the server validates it (api/admin/forms.ts) and any
// problem comes back as one message naming each path.
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';

/** What these commands need from the CLI: the admin tRPC client (createTRPCClient<AdminRouter> fits). */
export type FormCommandContext = {
  admin: {
    form: {
      create: { mutate: (input: { companyId: string; form: unknown }) => Promise<unknown> };
      update: { mutate: (input: { id: string; form: unknown }) => Promise<unknown> };
    };
  };
};

async function readFormFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new Error(`cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(`${file} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
}

function print(form: any, json: boolean) {
  if (json) {
    process.stdout.write(`${JSON.stringify(form)}\n`);
    return;
  }
  const rows: Array<[string, unknown]> = [
    ['id', form.id],
    ['slug', form.slug],
    ['name', form.name],
    ['locales', `${form.locales?.join(', ')} (default ${form.default_locale})`],
    ['active', form.active],
    ['fields', form.fields?.map((f: any) => `${f.key}:${f.field_type}`).join(' ')],
    ['submissions', form.submissions_count],
  ];
  for (const [k, v] of rows) process.stdout.write(`${k.padEnd(12)} ${v}\n`);
}

/** Runs an action; an error is one line on stderr and exit code 1. */
function action<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (error) {
      process.stderr.write(`error: ${((error as Error)?.message ?? String(error)).replace(/\s+/g, ' ')}\n`);
      process.exitCode = 1;
    }
  };
}

export function registerFormCommands(program: Command, ctx: FormCommandContext): void {
  const form = program.command('form').description('Formularios (solo lectura en la API REST)');
  form
    .command('create')
    .description('Crea un formulario a partir de un archivo JSON')
    .requiredOption('--company <id>', 'empresa dueña del formulario')
    .requiredOption('--file <path>', 'archivo del formulario (forma de la lectura Form + post_actions)')
    .option('--json', 'un documento JSON en stdout')
    .action(action(async (opts: { company: string; file: string; json?: boolean }) => {
      print(await ctx.admin.form.create.mutate({ companyId: opts.company, form: await readFormFile(opts.file) }), !!opts.json);
    }));
  form
    .command('update <id>')
    .description('Reemplaza la definición de un formulario con el archivo')
    .requiredOption('--file <path>', 'archivo del formulario')
    .option('--json', 'un documento JSON en stdout')
    .action(action(async (id: string, opts: { file: string; json?: boolean }) => {
      print(await ctx.admin.form.update.mutate({ id, form: await readFormFile(opts.file) }), !!opts.json);
    }));
}
