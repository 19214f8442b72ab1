// Every REST route of /api/v1 that a key calls, in one table. A new resource adds its routes here.
// Not in it (mounted by api/app.ts): /api/v1/openapi.json and /api/v1/docs (api/openapi/), and a
// person's sign-in and sign-out, POST /api/v1/user/sessions and DELETE /api/v1/user/sessions/current
// (api/auth/sessions.ts; their OpenAPI is api/openapi/sessions.ts).
import type { RouteDef } from '../route.ts';
import { automationRoutes } from './automations.ts';
import { accountingPeriodRoutes } from './accounting-periods.ts';
import { accountRoutes } from './accounts.ts';
import { bookingLinkRoutes } from './booking-links.ts';
import { bookingRoutes } from './bookings.ts';
import { calendarEventRoutes } from './calendar-events.ts';
import { companyRoutes } from './company.ts';
import { userRoutes } from './users.ts';
import { brandImageRoutes, brandRoutes } from './brands.ts';
import { customerRoutes } from './customers.ts';
import { formRoutes } from './forms.ts';
import { leadRoutes } from './leads.ts';
import { expenseRoutes, incomeRoutes } from './movements.ts';
import { recurringRoutes } from './recurring-transactions.ts';
import { reportRoutes } from './reports.ts';
import { saleRoutes } from './sales.ts';
import { invoiceRoutes } from './invoices.ts';
import { productCategoryImageRoutes, productCategoryRoutes } from './product-categories.ts';
import { productImageRoutes, productRoutes } from './products.ts';
import { userOAuthGrantRoutes } from './user-oauth-grants.ts';
import { userWebhookEndpointRoutes, webhookEndpointRoutes } from './webhook-endpoints.ts';

export const apiRoutes: RouteDef[] = [
  ...customerRoutes,
  ...leadRoutes,
  ...automationRoutes,
  ...productRoutes,
  ...productCategoryRoutes,
  ...brandRoutes,
  // The catalog's image routes after its other routes: the order the OpenAPI paths have always had.
  ...productImageRoutes,
  ...brandImageRoutes,
  ...productCategoryImageRoutes,
  ...formRoutes,
  ...calendarEventRoutes,
  ...bookingLinkRoutes,
  ...bookingRoutes,
  ...accountRoutes,
  ...incomeRoutes,
  ...expenseRoutes,
  ...saleRoutes,
  ...recurringRoutes,
  ...accountingPeriodRoutes,
  ...reportRoutes,
  ...invoiceRoutes,
  ...companyRoutes,
  ...userRoutes,
  ...webhookEndpointRoutes,
  ...userWebhookEndpointRoutes,
  ...userOAuthGrantRoutes,
];
