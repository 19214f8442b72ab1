// `wsctl webhook list|rotate-secret` and `wsctl delivery list|show|replay`
// (DESIGN.md, CLI contract): endpoints of a company, a new signing secret,
// and the delivery history with payloads and receiver answers.
import type { Command } from 'commander';
import { action } from '../action.ts';
import type { Outputs } from '../client.ts';
import { details, table } from '../output.ts';

type Delivery = Outputs['delivery']['show'];

function deliveryDetails(d: Delivery): string {
  return details([
    ['id', d.id],
    ['endpoint', d.endpoint_id],
    ['event', `${d.event} (${d.event_id})`],
    ['status', d.status],
    ['attempts', `${d.attempts}/${d.max_attempts}`],
    ['next attempt', d.next_attempt_at],
    ['delivered', d.delivered_at],
    ['response', d.response_status],
    ['error', d.error_message],
    ['created', d.created_at],
  ]) + `\n\npayload:\n${d.payload}\n\nresponse body:\n${d.response_body == null ? '-' : quoted(d.response_body)}`;
}

/** A receiver's answer, each of its lines after `| `: a line of it can never pass for a line of ours. */
function quoted(text: string): string {
  return text.split(/\r\n|\n/).map((line) => `| ${line}`).join('\n');
}

export function registerWebhookCommands(program: Command): void {
  const webhook = program.command('webhook').description('webhook endpoints of a company');

  webhook
    .command('list')
    .description("list a company's webhook endpoints with their health")
    .requiredOption('--company <id>', 'company id')
    .action(
      action(
        async ({ api, opts }) => api.webhook.list.query({ companyId: opts.company }),
        (endpoints) =>
          table(endpoints, [
            ['ID', (e) => e.id],
            ['URL', (e) => e.url],
            ['EVENTS', (e) => e.enabled_events],
            ['ACTIVE', (e) => (e.active ? 'yes' : e.disabled_reason ? `no (${e.disabled_reason})` : 'paused')],
            ['FAILURES', (e) => e.consecutive_failures],
            ['LAST', (e) => (e.last_delivery_at ? `${e.last_delivery_status} ${e.last_delivery_at}` : null)],
          ], '(no webhook endpoints)'),
      ),
    );

  webhook
    .command('rotate-secret')
    .description('give an endpoint a new signing secret, effective at once')
    .argument('<endpoint-id>', 'webhook endpoint id')
    .action(
      action(
        async ({ api, args: [id] }) => api.webhook.rotateSecret.mutate({ id: id! }),
        (rotated) => `${details([['id', rotated.id], ['secret', rotated.secret]])}\n\nThe next attempt of every delivery is signed with this secret.`,
      ),
    );

  const delivery = program.command('delivery').description('webhook deliveries: history, details, replay');

  delivery
    .command('list')
    .description("an endpoint's deliveries, newest first (100 at most)")
    .requiredOption('--endpoint <id>', 'webhook endpoint id')
    .option('--status <status>', 'pending, succeeded, failed or exhausted')
    .option('--event <event>', 'an event name, e.g. customer.created')
    .action(
      action(
        async ({ api, opts }) => api.delivery.list.query({ endpointId: opts.endpoint, status: opts.status, event: opts.event }),
        (deliveries) =>
          table(deliveries, [
            ['ID', (d) => d.id],
            ['EVENT', (d) => d.event],
            ['STATUS', (d) => d.status],
            ['ATTEMPTS', (d) => `${d.attempts}/${d.max_attempts}`],
            ['RESPONSE', (d) => d.response_status],
            ['NEXT', (d) => d.next_attempt_at],
            ['CREATED', (d) => d.created_at],
          ], '(no deliveries)'),
      ),
    );

  delivery
    .command('show')
    .description('one delivery with its signed payload and the receiver answer')
    .argument('<id>', 'delivery id')
    .action(action(async ({ api, args: [id] }) => api.delivery.show.query({ id: id! }), deliveryDetails));

  delivery
    .command('replay')
    .description('a new delivery of the same event (same event id and body), signed now; to an endpoint that is off it is held until it is switched on')
    .argument('<id>', 'delivery id')
    .action(action(async ({ api, args: [id] }) => api.delivery.replay.mutate({ id: id! }), deliveryDetails));
}
