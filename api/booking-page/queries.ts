// What the public booking pages read that no API resource does: the host as a page shows them (name,
// photo, the company's logo, their booking branding).
import type { Queryable } from '../../db/pool.ts';
import type { PageBranding } from './html.ts';

export type HostRow = { name: string; avatar: string | null; logo: string | null; branding: PageBranding | null };

/** The host as a page shows them; `companyId` null: no company's logo (a host page listing several companies' links). */
export async function hostOf(db: Queryable, companyId: string | null, userId: string): Promise<HostRow> {
  const { rows } = await db.query<HostRow>(
    `SELECT coalesce(nullif(trim(concat_ws(' ', u.first_name, u.last_name)), ''), u.booking_slug, 'Anfitrión') AS name,
            coalesce(u.avatar_thumbnail_url, u.avatar_url) AS avatar, coalesce(c.logo_thumbnail_url, c.logo_url) AS logo,
            u.settings_preferences->'booking_branding' AS branding
       FROM users u LEFT JOIN companies c ON c.id = $1 WHERE u.id = $2`,
    [companyId, userId],
  );
  return rows[0];
}
