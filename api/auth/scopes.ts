// Scopes are `<action>-<resource>` (contract, Authentication 2).

export const SCOPE_ACTIONS = ['create', 'read', 'update', 'delete'] as const;

export const SCOPE_RESOURCES = [
  'products',
  'product_categories',
  'customers',
  'leads',
  'automations',
  'calendar_events',
  'booking_links',
  'bookings',
  'forms',
  'form_submissions',
  'company',
  'users',
  'webhook_endpoints',
  'accounts',
  'incomes',
  'expenses',
  'reports',
  'sales',
  'recurring_transactions',
  'invoices',
] as const;

/** form_submissions only has `create` in the contract. */
export const ALL_SCOPES: readonly string[] = SCOPE_RESOURCES.flatMap((resource) =>
  resource === 'form_submissions'
    ? [`create-${resource}`]
    : SCOPE_ACTIONS.map((action) => `${action}-${resource}`),
);

const KNOWN = new Set(ALL_SCOPES);

/** `all` or a comma list; throws on an unknown slug so a typo never silently grants less. */
export function parseScopes(input: string | string[]): string[] {
  const parts = (Array.isArray(input) ? input : input.split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  if (parts.length === 1 && parts[0] === 'all') return [...ALL_SCOPES];
  const unknown = parts.filter((s) => !KNOWN.has(s));
  if (unknown.length > 0) throw new Error(`Unknown scope(s): ${unknown.join(', ')}`);
  if (parts.length === 0) throw new Error('At least one scope is required');
  return [...new Set(parts)];
}

// Opt-in modules (contract, Authentication 6): enabled by operators, never by API.
// Only invoicing: automations, like everything in the 1.0.0 release, are core
// (DESIGN.md) and reached by every company with the `*-automations` scopes.
export const OPT_IN_MODULES = ['invoicing'] as const;
export type Module = (typeof OPT_IN_MODULES)[number];

/** What a member may do in the application beyond the API's scopes (`wsctl user set-permissions`; owners hold them all). */
export const PERMISSIONS = ['manage-developers'] as const;
export type Permission = (typeof PERMISSIONS)[number];
