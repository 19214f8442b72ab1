// `wsctl form download`: a stored form file, saved where the operator says. Not a tRPC procedure (bytes,
// up to the field's size cap, streamed to disk): GET /admin/files/:id behind the same admin token
// (api/admin/files.ts). An existing file is never overwritten, and a download cut short leaves no part.
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AdminEndpoint } from './client.ts';
import { CliError } from './output.ts';

export type Saved = { id: string; company_id: string; path: string; content_type: string; size_bytes: number };

export async function downloadFile(endpoint: AdminEndpoint, companyId: string, id: string, out: string): Promise<Saved> {
  const where = `${endpoint.url}/admin/files/${encodeURIComponent(id)}?company=${encodeURIComponent(companyId)}`;
  let res: Response;
  try {
    res = await fetch(where, { headers: { authorization: `Bearer ${endpoint.token}` }, signal: AbortSignal.timeout(endpoint.timeoutMs) });
  } catch (error) {
    throw new CliError(`cannot reach ${endpoint.url}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`);
  }
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { error?: string; message?: string } | null;
    if (res.status === 401) throw new CliError(`admin token rejected by ${endpoint.url} (401): check ADMIN_TOKEN`);
    if (res.status === 404 && body?.error === 'not_found') throw new CliError(`company ${companyId} has no file ${id}`);
    throw new CliError(body?.error ? `${body.error}: ${body.message ?? ''}` : `unexpected answer from ${endpoint.url} (HTTP ${res.status}): is this the workspace service?`);
  }
  const target = path.resolve(out);
  try {
    // 'wx': refused when the path exists (no file of the operator's is replaced by a download).
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), createWriteStream(target, { flags: 'wx' }));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new CliError(`${target} exists: choose another --out (nothing was overwritten)`);
    await rm(target, { force: true });
    throw new CliError(`the download of ${id} was cut short (${(error as Error).message}); nothing was kept`);
  }
  return { id, company_id: companyId, path: target, content_type: res.headers.get('content-type') ?? '', size_bytes: Number(res.headers.get('content-length') ?? 0) };
}
