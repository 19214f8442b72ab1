#!/usr/bin/env node
// wsctl: the operator CLI. Each command calls one admin tRPC procedure at
// <url>/admin/trpc (DESIGN.md, "CLI contract"). A domain's commands live in
// cli/commands/<domain>.ts and are registered here; global options (--url,
// --json) are read by every command through optsWithGlobals (cli/action.ts).
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerAutomationCommands } from './commands/automation.ts';
import { registerCalendarCommands } from './commands/calendar.ts';
import { registerPeriodCommands } from './commands/period.ts';
import { registerCompanyCommands } from './commands/company.ts';
import { registerFormCommands } from './commands/form.ts';
import { registerKeyCommands } from './commands/key.ts';
import { registerMcpCommands } from './commands/mcp.ts';
import { registerOauthCommands } from './commands/oauth.ts';
import { registerUserCommands } from './commands/user.ts';
import { registerWebhookCommands } from './commands/webhook.ts';
import { reportError } from './output.ts';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

const program = new Command()
  .name('wsctl')
  .description('Operate the workspace service: companies, API keys, users, automations, forms, webhooks, MCP, OAuth, calendars, accounting periods.')
  .version(version)
  .option('--url <url>', 'service root URL (default: $ADMIN_URL, else http://localhost:$PORT)')
  .option('--json', 'print exactly one JSON document on stdout')
  .configureHelp({ showGlobalOptions: true, sortSubcommands: true })
  .addHelpText(
    'after',
    [
      '',
      'Environment (docs/cli.md):',
      '  ADMIN_URL              the service root, when --url is not given',
      '  ADMIN_TOKEN            the admin token (else the file $DATA_DIR/admin-token)',
      '  WSCTL_TIMEOUT_SECONDS  how long a call waits for its answer, in seconds (default 60, at most 86400)',
      '  WSCTL_DEBUG=1          print the stack trace of an error',
    ].join('\n'),
  );

// A reader that stops early (`wsctl ... --json | head -1`) closes the pipe: the rest of the output
// has nowhere to go, which is what that reader asked for. Stop quietly, as `cat` does, rather than
// crash with a stack trace on stderr (an unhandled EPIPE).
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  reportError(error);
});

registerCompanyCommands(program);
registerKeyCommands(program);
registerUserCommands(program);
registerAutomationCommands(program);
registerFormCommands(program);
registerWebhookCommands(program);
registerMcpCommands(program);
registerOauthCommands(program);
registerCalendarCommands(program);
registerPeriodCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  // Actions report their own failures; this catches anything left (a bug), still as one line.
  reportError(error);
}
