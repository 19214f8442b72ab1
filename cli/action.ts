// The glue every command uses: resolve the global options, build the admin
// client, run the call, then print the result as JSON (--json) or for people.
// Any failure becomes one stderr line and a non-zero exit (output.ts).
import type { Command } from 'commander';
import { createAdminClient, type AdminClient, type AdminEndpoint } from './client.ts';
import { printJson, printLines, reportError } from './output.ts';

export type GlobalOptions = { url?: string; json?: boolean };

export type ActionContext = {
  api: AdminClient;
  /** Positional arguments in declaration order. */
  args: string[];
  /** This command's own options, as commander parsed them. */
  opts: Record<string, any>;
  /** The service's URL and the admin token, for a call that is no procedure (`form download`). */
  endpoint: AdminEndpoint;
};

export function action<R>(run: (ctx: ActionContext) => Promise<R>, human: (result: R) => string) {
  // commander calls actions with (...positional args, options, command).
  return async (...params: unknown[]): Promise<void> => {
    const command = params.at(-1) as Command;
    const globals = command.optsWithGlobals<GlobalOptions>();
    let url: string | undefined;
    try {
      const client = createAdminClient({ url: globals.url });
      url = client.url;
      const result = await run({ api: client.api, args: params.slice(0, -2) as string[], opts: command.opts(), endpoint: client.endpoint });
      if (globals.json) printJson(result);
      else printLines(human(result));
    } catch (error) {
      reportError(error, url);
    }
  };
}
