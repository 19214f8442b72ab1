// `wsctl user set-password`: a password lets the user sign in on the OAuth
// consent page (MCP clients); API keys do not need one.
import type { Command } from 'commander';
import { action } from '../action.ts';
import { PERMISSIONS } from '../../api/auth/scopes.ts';
import { listOf } from '../options.ts';
import { cell } from '../output.ts';

export function registerUserCommands(program: Command): void {
  const user = program.command('user').description('manage users');

  user
    .command('set-password')
    .description('set the password a user signs in with (API sessions, OAuth); ends their open sessions')
    .argument('<user-id>', 'user id')
    .requiredOption('--password <password>', 'the new password (8 to 200 characters, not only spaces, no control characters)')
    .action(
      action(
        async ({ api, args: [id], opts }) => api.user.setPassword.mutate({ id, password: opts.password }),
        (user) => `Password set for ${cell(user.email)} (${user.id})`,
      ),
    );

  user
    .command('set-permissions')
    .description("replace a member's permissions in a company (owners hold them all): manage-developers")
    .argument('<user-id>', 'user id')
    .requiredOption('--company <id>', 'company id')
    .requiredOption('--permissions <list>', `comma separated (${PERMISSIONS.join(', ')}); '' clears them`, listOf(PERMISSIONS))
    .action(
      action(
        async ({ api, args: [id], opts }) => api.user.setPermissions.mutate({ id: id!, companyId: opts.company, permissions: opts.permissions }),
        (m) => `Permissions of ${m.user_id} in ${m.company_id}: ${m.permissions.join(', ') || '(none)'}${m.is_owner ? ' (owner: every permission)' : ''}`,
      ),
    );

  user
    .command('add-membership')
    .description('add an existing person to another company (the REST API answers 409 for an email already in the service)')
    .argument('<user-id>', 'user id')
    .requiredOption('--company <id>', 'company id')
    .option('--owner', 'make the person an owner of that company')
    .action(
      action(
        async ({ api, args: [id], opts }) => api.user.addMembership.mutate({ id: id!, companyId: opts.company, owner: !!opts.owner }),
        (m) => `${m.user_id} is now a member of ${m.company_id}${m.is_owner ? ' (owner)' : ''}`,
      ),
    );
}
