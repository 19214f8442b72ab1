// Every REST route of /api/v1, in one table. A new resource adds its routes here.
import type { RouteDef } from '../route.ts';
import { automationRoutes } from './automations.ts';
import { brandRoutes } from './brands.ts';
import { catalogImageRoutes } from './catalog-images.ts';
import { customerRoutes } from './customers.ts';
import { formRoutes } from './forms.ts';
import { leadRoutes } from './leads.ts';
import { productCategoryRoutes } from './product-categories.ts';
import { productRoutes } from './products.ts';
import { userWebhookEndpointRoutes, webhookEndpointRoutes } from './webhook-endpoints.ts';

export const apiRoutes: RouteDef[] = [
  ...customerRoutes,
  ...leadRoutes,
  ...automationRoutes,
  ...productRoutes,
  ...productCategoryRoutes,
  ...brandRoutes,
  ...catalogImageRoutes,
  ...formRoutes,
  ...webhookEndpointRoutes,
  ...userWebhookEndpointRoutes,
];
