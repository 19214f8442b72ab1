// `wsctl key create|list|revoke`: API keys of a company. The secret
// (`service_sk_...`) exists only in the answer of `key create`; the service
// keeps its digest.
import type { Command } from 'commander';
import { action } from '../action.ts';
import type { Outputs } from '../client.ts';
import { list, positiveInt } from '../options.ts';
import { details, table } from '../output.ts';

type Key = Outputs['key']['list'][number];

function scopesSummary(scopes: string[]): string {
  return scopes.length <= 3 ? scopes.join(',') : `${scopes.length} scopes`;
}

function keyDetails(key: Key): Array<[string, unknown]> {
  return [
    ['id', key.id],
    ['name', key.name],
    ['company', key.company_id],
    ['user', key.user_id],
    ['scopes', key.scopes.join(' ')],
    ['origins', key.allowed_origins],
    ['rate limit', key.rate_limit_per_minute === null ? 'default' : `${key.rate_limit_per_minute}/min`],
    ['last four', key.secret_last_four],
    ['revoked', key.revoked_at],
    ['created', key.created_at],
  ];
}

export function registerKeyCommands(program: Command): void {
  const key = program.command('key').description('issue, list and revoke API keys');

  key
    .command('create')
    .description('issue an API key; the secret is shown only once')
    .requiredOption('--company <id>', 'company id')
    .option('--user <id>', 'user the key acts as (default: the owner)')
    .requiredOption('--scopes <all|list>', "'all' or comma separated scopes, e.g. read-customers,read-leads")
    .option('--origins <list>', 'allowed browser Origins, comma separated host names (e.g. shop.example,*.example)', list)
    .option('--name <name>', 'a label for people')
    .option('--rate-limit <n>', 'requests per minute for this key (default: the service limit)', positiveInt)
    .action(
      action(
        async ({ api, opts }) =>
          api.key.create.mutate({
            companyId: opts.company,
            userId: opts.user,
            scopes: opts.scopes,
            origins: opts.origins,
            name: opts.name,
            rateLimitPerMinute: opts.rateLimit,
          }),
        (created) => `${details([...keyDetails(created), ['secret', created.secret]])}\n\nKeep the secret now: it is not shown again.`,
      ),
    );

  key
    .command('list')
    .description("list a company's keys (never their secrets)")
    .requiredOption('--company <id>', 'company id')
    .action(
      action(
        async ({ api, opts }) => api.key.list.query({ companyId: opts.company }),
        (keys) =>
          table(keys, [
            ['ID', (k) => k.id],
            ['NAME', (k) => k.name],
            ['USER', (k) => k.user_id],
            ['SCOPES', (k) => scopesSummary(k.scopes)],
            ['LAST4', (k) => k.secret_last_four],
            ['STATUS', (k) => (k.revoked_at ? `revoked ${k.revoked_at}` : 'active')],
            ['CREATED', (k) => k.created_at],
          ], '(no keys)'),
      ),
    );

  key
    .command('revoke')
    .description('revoke a key; requests with it are refused at once')
    .argument('<id>', 'key id')
    .action(action(async ({ api, args: [id] }) => api.key.revoke.mutate({ id }), (revoked) => `Revoked key ${revoked.id} at ${revoked.revoked_at}`));
}
