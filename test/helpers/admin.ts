// The admin tRPC API called over HTTP, as `wsctl` calls it, for tests that need the answer's envelope
// (status, tRPC error code) rather than wsctl's printed line (test/helpers/cli.ts runs wsctl itself).
import { ADMIN_TOKEN } from './app.ts';

/** Calls an admin tRPC mutation over HTTP, as `wsctl` does. */
export async function adminMutation(url: string, procedure: string, input: unknown, token = ADMIN_TOKEN) {
  const res = await fetch(`${url}/admin/trpc/${procedure}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(input),
  });
  const body = (await res.json()) as any;
  return { status: res.status, body, data: body?.result?.data, error: body?.error };
}
