// Every scenario of `npm run bench`, in the order they run. A new scenario is
// a module exporting a `Scenario` (bench/lib/scenario.ts) and one line here;
// a benchmark that is its own program joins through standaloneScenario.
import { standaloneScenario } from '../lib/standalone.ts';
import type { Scenario } from '../lib/scenario.ts';
import { bookings } from './bookings.ts';
import { calendar } from './calendar.ts';
import { customers } from './customers.ts';
import { mcp } from './mcp.ts';
import { money } from './money.ts';
import { webhooks } from './webhooks.ts';

export const scenarios: Scenario[] = [
  customers,
  calendar,
  bookings,
  standaloneScenario('catalog', 'product list with filters and text search over 100,000 products vs bare node:http; thumbnails/s worker vs sharp alone'),
  standaloneScenario('forms', 'multipart submissions/s with a 1 MB PDF; peak RSS growth during 20 concurrent 25 MB uploads'),
  webhooks,
  mcp,
  money,
];
