// `wsctl user set-password`: a password lets the user sign in on the OAuth
// consent page (MCP clients); API keys do not need one.
import type { Command } from 'commander';
import { action } from '../action.ts';

export function registerUserCommands(program: Command): void {
  const user = program.command('user').description('manage users');

  user
    .command('set-password')
    .description('set the password a user signs in with (OAuth)')
    .argument('<user-id>', 'user id')
    .requiredOption('--password <password>', 'the new password (at least 8 characters)')
    .action(
      action(
        async ({ api, args: [id], opts }) => api.user.setPassword.mutate({ id, password: opts.password }),
        (user) => `Password set for ${user.email} (${user.id})`,
      ),
    );
}
