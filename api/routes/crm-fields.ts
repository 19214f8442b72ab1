// Field schemas shared by customers and leads (DESIGN.md fixes `name`,
// `email`, `phone`; leads add `company_name` and `job_title`).
import { z } from 'zod';

export const text = (max: number) => z.string().trim().max(max);
export const optionalText = (max: number) => text(max).nullable().optional();

export const contactFields = {
  name: text(200).min(1).describe('Nombre completo o razón comercial'),
  email: z.email().max(254).nullable().optional(),
  phone: optionalText(50).describe('Formato libre'),
  notes: optionalText(5000),
  tags: z.array(text(50).min(1)).max(50).optional().describe('Etiquetas libres'),
};

export const addressSchema = z.strictObject({
  line1: optionalText(200),
  line2: optionalText(200),
  city: optionalText(100),
  state: optionalText(100),
  postal_code: optionalText(20),
  country: z.string().regex(/^[A-Z]{2}$/, 'código ISO 3166-1 alfa-2 en mayúsculas').nullable().optional(),
});

export const timestamps = {
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
};
