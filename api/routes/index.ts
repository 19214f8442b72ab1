// Every REST route of /api/v1, in one table. A new resource adds its routes here.
import type { RouteDef } from '../route.ts';
import { automationRoutes } from './automations.ts';
import { customerRoutes } from './customers.ts';
import { formRoutes } from './forms.ts';
import { leadRoutes } from './leads.ts';

export const apiRoutes: RouteDef[] = [...customerRoutes, ...leadRoutes, ...automationRoutes, ...formRoutes];
