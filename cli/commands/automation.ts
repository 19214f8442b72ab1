// `wsctl automation create`: the REST API cannot create automations (contract,
// Automation), so operators load them from a JSON file.
import type { Command } from 'commander';
import { action } from '../action.ts';
import { readJsonObject } from '../options.ts';
import { details } from '../output.ts';

export function registerAutomationCommands(program: Command): void {
  const automation = program.command('automation').description('manage automations');

  automation
    .command('create')
    .description('create an automation from a JSON file {name, description?, active?, trigger_type, trigger_config?, steps?: [{type, ...}]}')
    .requiredOption('--company <id>', 'company id')
    .requiredOption('--file <path>', 'JSON file with the automation')
    .action(
      action(
        async ({ api, opts }) => {
          const file = await readJsonObject(opts.file);
          // The server validates the shape; the cast only satisfies the client's input type.
          return api.automation.create.mutate({ companyId: opts.company, automation: file as any });
        },
        (created: Record<string, any>) =>
          details([
            ['id', created.id],
            ['name', created.name],
            ['active', created.active],
            ['trigger', created.trigger_type],
            ['steps', Array.isArray(created.steps) ? created.steps.length : '-'],
            ['created', created.created_at],
          ]),
      ),
    );
}
