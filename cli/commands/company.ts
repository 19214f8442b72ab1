// `wsctl company create|update|show|list`: tenants, their plan, modules and limits.
import { readFile } from 'node:fs/promises';
import { Option, type Command } from 'commander';
import { action } from '../action.ts';
import type { Outputs } from '../client.ts';
import { OPT_IN_MODULES, type Module } from '../../api/auth/scopes.ts';
import { MAX_TEAM_SIZE } from '../../api/admin/limits.ts';
import { intOrNone, intUpTo, listOf, noneToNull, nonNegativeInt, onOff, readFailure } from '../options.ts';
import { CliError, cell, details, table } from '../output.ts';

const PLANS = ['free', 'starter', 'enterprise'] as const;

type Company = Outputs['company']['show'];

function companyDetails(company: Company): string {
  return details([
    ['id', company.id],
    ['name', company.name],
    ['slug', company.slug],
    ['plan', company.plan],
    ['mcp quota', company.mcp_quota],
    ['modules', company.enabled_modules],
    ['time zone', company.timezone],
    ['team', `${company.team.current_team_size}/${company.team.max_team_size} (${company.team.seats_available} seats available)`],
    ['response cache', company.response_cache ? 'on' : 'off'],
    ['storage quota', `${company.storage_quota_mb} MB`],
    ['created', company.created_at],
    ['updated', company.updated_at],
  ]);
}

/** Options shared by create and update (DESIGN.md: "same options"). */
function companyOptions(command: Command): Command {
  return command
    .option('--max-team-size <n>', `seats in the team (1-${MAX_TEAM_SIZE})`, intUpTo(MAX_TEAM_SIZE))
    .option('--modules <list>', `opt-in modules, comma separated (${OPT_IN_MODULES.join(',')}; automations are core); '' for none`, listOf(OPT_IN_MODULES))
    .addOption(new Option('--plan <plan>', 'MCP plan').choices(PLANS))
    .option('--mcp-quota <n>', "MCP calls per cycle; the enterprise plan's only, and it needs one ('none' clears it when leaving enterprise)", intOrNone);
}

/** Commander option names → admin procedure input. */
function companyFields(opts: Record<string, any>) {
  return {
    name: opts.name as string | undefined,
    maxTeamSize: opts.maxTeamSize as number | undefined,
    modules: opts.modules as Module[] | undefined,
    plan: opts.plan as (typeof PLANS)[number] | undefined,
    mcpQuota: noneToNull(opts.mcpQuota as number | 'none' | undefined),
  };
}

export function registerCompanyCommands(program: Command): void {
  const company = program.command('company').description('create, change and inspect companies (tenants)');

  company
    .command('tax-profile')
    .description('set the emitter data of tax invoices (CFDI): RFC, name, regime, postal code and the CSD files; secrets are never printed')
    .argument('<id>', 'company id')
    .requiredOption('--rfc <rfc>', 'RFC of the company')
    .requiredOption('--legal-name <name>', 'legal name as registered with the SAT')
    .requiredOption('--tax-regime <code>', 'c_RegimenFiscal code, e.g. 601; it must fit the RFC (12 characters: a company, 13: a person)')
    .requiredOption('--zip <zip>', 'postal code of issue (LugarExpedicion)')
    .requiredOption('--cer <file>', 'CSD certificate (.cer)')
    .requiredOption('--key <file>', 'CSD private key (.key)')
    .requiredOption('--key-password <password>', 'password of the key')
    .action(
      action(
        async ({ api, args: [id], opts }) => {
          const read = async (file: string) => (await readFile(file)).toString('base64');
          return api.taxProfile.set.mutate({
            companyId: id,
            rfc: opts.rfc,
            legalName: opts.legalName,
            taxRegime: opts.taxRegime,
            zip: opts.zip,
            cer: await read(opts.cer).catch((error) => { throw new CliError(`cannot read --cer ${opts.cer}: ${readFailure(error)}`); }),
            key: await read(opts.key).catch((error) => { throw new CliError(`cannot read --key ${opts.key}: ${readFailure(error)}`); }),
            keyPassword: opts.keyPassword,
          });
        },
        (p) => `Tax profile of ${p.company_id}: ${cell(p.rfc)} ${cell(p.legal_name)} (regime ${cell(p.tax_regime)}, CP ${cell(p.zip)})
CSD ${p.certificate_number}, valid until ${p.valid_to}`,
      ),
    );

  companyOptions(
    company
      .command('create')
      .description('create a company and its owner user')
      .requiredOption('--name <name>', 'company name')
      .option('--owner-email <email>', 'owner email, of a new user (default owner@<slug>.example); one another user has is refused'),
  ).action(
    action(
      async ({ api, opts }) => api.company.create.mutate({ ...companyFields(opts), name: opts.name, ownerEmail: opts.ownerEmail }),
      ({ company, owner }) => `Created company ${cell(company.name)} (${company.id})\nOwner: ${cell(owner.email)} (${owner.id})\n\n${companyDetails(company)}`,
    ),
  );

  companyOptions(
    company
      .command('update')
      .description('change a company; only the options given are changed')
      .argument('<id>', 'company id')
      .option('--name <name>', 'company name')
      .option('--owner-email <email>', "the owner's sign-in email"),
  )
    .option('--response-cache <on|off>', 'cache GET responses for this company', onOff)
    .option('--storage-quota-mb <n>', 'file storage quota in MB', nonNegativeInt)
    .option('--timezone <zone>', 'IANA zone of money dates (accounting months, report days); the ledger is rebuilt (refused if money would cross into or out of a closed month)')
    .action(
      action(
        async ({ api, args: [id], opts }) => {
          const input = {
            ...companyFields(opts),
            ownerEmail: opts.ownerEmail as string | undefined,
            responseCache: opts.responseCache as boolean | undefined,
            storageQuotaMb: opts.storageQuotaMb as number | undefined,
            timezone: opts.timezone as string | undefined,
          };
          if (Object.values(input).every((value) => value === undefined)) throw new CliError('nothing to update: give at least one option (see wsctl company update --help)');
          return api.company.update.mutate({ id, ...input });
        },
        companyDetails,
      ),
    );

  company
    .command('show')
    .description('show one company')
    .argument('<id>', 'company id')
    .action(action(async ({ api, args: [id] }) => api.company.show.query({ id }), companyDetails));

  company
    .command('list')
    .description('list all companies, newest first')
    .action(
      action(
        async ({ api }) => api.company.list.query(),
        (companies) =>
          table(companies, [
            ['ID', (c) => c.id],
            ['NAME', (c) => c.name],
            ['SLUG', (c) => c.slug],
            ['PLAN', (c) => c.plan],
            ['TEAM', (c) => `${c.team.current_team_size}/${c.team.max_team_size}`],
            ['MODULES', (c) => c.enabled_modules],
            ['CREATED', (c) => c.created_at],
          ], '(no companies)'),
      ),
    );
}
