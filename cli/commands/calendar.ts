// `wsctl calendar connect|status|disconnect --user <id>` (DESIGN.md, CLI
// contract): a member's Google Calendar. Without --refresh-token, connect
// prints the consent URL to open in a browser signed in as the member.
import type { Command } from 'commander';
import { action } from '../action.ts';
import { cell } from '../output.ts';

type Status = { user_id: string; connected: boolean; status?: string; calendar_id?: string; last_synced_at?: string | null; last_error?: string | null };

function describe(s: Status): string {
  if (!s.connected) return `${s.user_id}: not connected`;
  return [`${s.user_id}: ${s.status} (calendar ${s.calendar_id})`, `last synced: ${s.last_synced_at ?? 'never'}`, ...(s.last_error ? [`last error: ${cell(s.last_error)}`] : [])].join('\n');
}

export function registerCalendarCommands(program: Command): void {
  const calendar = program.command('calendar').description("a member's Google Calendar");
  calendar
    .command('connect')
    .description('print the Google consent URL, or store a refresh token the operator already holds')
    .requiredOption('--user <id>', 'user id')
    .option('--refresh-token <token>', 'a Google refresh token with the calendar.events scope')
    .option('--calendar-id <id>', "the calendar to sync (default: the member's primary)")
    .action(
      action(
        async ({ api, opts }) => api.calendar.connect.mutate({ userId: opts.user, refreshToken: opts.refreshToken, calendarId: opts.calendarId }),
        (r: any) => (r.consent_url ? `Open this URL signed in as the member (valid ${r.expires_in / 60} minutes):\n${r.consent_url}` : describe(r)),
      ),
    );
  calendar
    .command('status')
    .description("the member's connection: active, or needing re-authorization, and the last sync")
    .requiredOption('--user <id>', 'user id')
    .action(action(async ({ api, opts }) => api.calendar.status.query({ userId: opts.user }), (s: any) => describe(s)));
  calendar
    .command('disconnect')
    .description('forget the token and the events imported from Google')
    .requiredOption('--user <id>', 'user id')
    .action(action(async ({ api, opts }) => api.calendar.disconnect.mutate({ userId: opts.user }), (s: any) => describe(s)));
}
