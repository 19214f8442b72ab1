// Admin procedures for `wsctl`: one router per domain (routers/), combined
// here. Routers validate input and call the domain modules beside them (one
// per router: companies.ts, keys.ts, users.ts, automations.ts, forms.ts,
// oauth.ts, calendar.ts, periods.ts, tax-profile.ts) or the query modules the
// REST routes use; they hold no SQL.
import { automationRouter } from './routers/automations.ts';
import { calendarRouter } from './routers/calendar.ts';
import { periodRouter } from './routers/periods.ts';
import { taxProfileRouter } from './routers/tax-profile.ts';
import { companyRouter } from './routers/companies.ts';
import { formRouter } from './routers/forms.ts';
import { keyRouter } from './routers/keys.ts';
import { mcpRouter } from './routers/mcp.ts';
import { oauthRouter } from './routers/oauth.ts';
import { userRouter } from './routers/users.ts';
import { deliveryRouter, webhookRouter } from './routers/webhooks.ts';
import { router } from './trpc.ts';

export const adminRouter = router({
  company: companyRouter,
  key: keyRouter,
  user: userRouter,
  automation: automationRouter,
  form: formRouter,
  webhook: webhookRouter,
  delivery: deliveryRouter,
  mcp: mcpRouter,
  oauth: oauthRouter,
  calendar: calendarRouter,
  period: periodRouter,
  taxProfile: taxProfileRouter,
});

export type AdminRouter = typeof adminRouter;
