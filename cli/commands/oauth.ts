// `wsctl oauth grants --user <id>` and `wsctl oauth revoke <grant-id>` (DESIGN.md, CLI contract).
import type { Command } from 'commander';
import { action } from '../action.ts';
import { table } from '../output.ts';

export function registerOauthCommands(program: Command): void {
  const oauth = program.command('oauth').description('OAuth connections of MCP clients');
  oauth
    .command('grants')
    .description("OAuth connections (MCP clients) of a person (--user) or of a company (--company); state 'expired': approved but no longer usable (code never exchanged, tokens expired)")
    .option('--user <id>', 'user id')
    .option('--company <id>', 'company id')
    .action(
      action(
        async ({ api, opts }) => api.oauth.grants.query({ userId: opts.user, companyId: opts.company }),
        (grants) =>
          table(grants, [
            ['ID', (g) => g.id],
            ['CLIENT', (g) => g.client_name ?? g.client_id],
            ['COMPANY', (g) => g.company_id],
            ['SCOPES', (g) => g.scopes.join(' ')],
            ['STATE', (g) => (g.revoked_at ? 'revoked' : g.active ? 'active' : 'expired')],
          ]),
      ),
    );
  oauth
    .command('revoke')
    .description('revoke an OAuth connection: its tokens stop working at once')
    .argument('<grant-id>', 'grant id')
    .action(action(async ({ api, args: [id] }) => api.oauth.revoke.mutate({ id: id! }), (g) => `Revoked ${g.id}`));
}
