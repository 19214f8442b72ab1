// `wsctl mcp activity --company <id>` (DESIGN.md, CLI contract): the last 25
// MCP tool calls of a company and the success rate of the last 24 hours.
import type { Command } from 'commander';
import { action } from '../action.ts';
import { cell } from '../output.ts';

export function registerMcpCommands(program: Command): void {
  const mcp = program.command('mcp').description('MCP server activity');
  mcp
    .command('activity')
    .description('the last 25 MCP tool calls of a company and the 24-hour success rate')
    .requiredOption('--company <id>', 'company id')
    .action(
      action(
        async ({ api, opts }) => api.mcp.activity.query({ companyId: opts.company }),
        (a) => {
          const rate = a.last_24h.success_rate === null ? 'n/a' : `${(a.last_24h.success_rate * 100).toFixed(1)}%`;
          const lines = a.recent.map((c) => `${c.created_at}  ${cell(c.tool).padEnd(22)} ${c.ok ? 'ok' : `error ${c.error_code}`}  ${c.duration_ms} ms  ${cell(c.credential)}`);
          return [`last 24 h: ${a.last_24h.calls} calls, ${rate} succeeded`, ...lines].join('\n');
        },
      ),
    );
}
