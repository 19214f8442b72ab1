// Customers (contract: Customers and leads). Fields: name, email, phone (fixed
// by DESIGN.md), legal_name and tax_id (for invoicing: the RFC), address,
// notes, tags, and custom properties flattened on read.
import { contactCreatedData } from '../../db/contacts.ts';
import { standardRoutes } from './standard-routes.ts';
import { CONTACT_SEARCH } from './crm-fields.ts';
import { CUSTOMER_RESERVED, serializeCustomer } from './customer-queries.ts';
import { customerCreate, customerSchema, customerUpdate } from './customer-schemas.ts';

export const customerRoutes = standardRoutes({
  table: 'customers',
  jsonColumns: new Set(['address', 'custom_properties']),
  path: '/customers',
  scopeResource: 'customers',
  tag: 'Customers',
  singular: 'un cliente',
  plural: 'los clientes',
  createSchema: customerCreate,
  updateSchema: customerUpdate,
  responseSchema: customerSchema,
  example: {
    name: 'Comercial del Norte',
    email: 'compras@norte.example',
    phone: '+52 81 5555 0000',
    tax_id: 'CNO010101AB1',
    address: { line1: 'Av. Constitución 100', city: 'Monterrey', state: 'NL', postal_code: '64000', country: 'MX' },
    tags: ['mayoreo'],
    custom_properties: [{ key: 'nivel', value: 'oro' }],
  },
  serialize: serializeCustomer,
  reserved: CUSTOMER_RESERVED,
  searchExpression: CONTACT_SEARCH,
  createdEvent: {
    name: 'customer.created',
    data: (row) => contactCreatedData('customers', row),
  },
});
