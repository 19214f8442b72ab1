// Every scenario of `npm run bench`, in the order they run. A new scenario is
// a module exporting a `Scenario` (bench/lib/scenario.ts) and one line here.
import type { Scenario } from '../lib/scenario.ts';
import { customers } from './customers.ts';

export const scenarios: Scenario[] = [customers];
