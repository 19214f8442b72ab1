// `wsctl form download`: a stored form file, saved where the operator says. Not a tRPC procedure (bytes,
// up to the field's size cap, streamed to disk): GET /admin/files/:id behind the same admin token
// (api/admin/files.ts). An existing file is never overwritten, and a download cut short leaves no part.
import { open, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AdminEndpoint } from './client.ts';
import { readFailure } from './options.ts';
import { CliError, networkReason } from './output.ts';

export type Saved = { id: string; company_id: string; path: string; content_type: string; size_bytes: number };

export async function downloadFile(endpoint: AdminEndpoint, companyId: string, id: string, out: string): Promise<Saved> {
  const target = path.resolve(out);
  // Opened first ('wx': refused when the path exists), so a path that cannot be written costs no download.
  let file: FileHandle;
  try {
    file = await open(target, 'wx');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliError(code === 'EEXIST' ? `${target} exists: choose another --out (nothing was overwritten)` : `cannot write ${target}: ${readFailure(error)}`);
  }
  try {
    const where = `${endpoint.url}/admin/files/${encodeURIComponent(id)}?company=${encodeURIComponent(companyId)}`;
    let res: Response;
    try {
      res = await fetch(where, { headers: { authorization: `Bearer ${endpoint.token}` }, signal: AbortSignal.timeout(endpoint.timeoutMs) });
    } catch (error) {
      throw new CliError(`cannot reach ${endpoint.url}: ${networkReason(error) ?? (error as Error).message}`);
    }
    if (!res.ok) {
      const body = (await res.json().catch(() => null)) as { error?: string; message?: string } | null;
      if (res.status === 401) throw new CliError(`admin token rejected by ${endpoint.url} (401): check ADMIN_TOKEN`);
      if (res.status === 404 && body?.error === 'not_found') throw new CliError(`company ${companyId} has no file ${id}`);
      throw new CliError(body?.error ? `${body.error}: ${body.message ?? ''}` : `unexpected answer from ${endpoint.url} (HTTP ${res.status}): is this the workspace service?`);
    }
    try {
      await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), file.createWriteStream());
    } catch (error) {
      throw new CliError(`the download of ${id} was cut short (${(error as Error).message}); nothing was kept`);
    }
    return { id, company_id: companyId, path: target, content_type: res.headers.get('content-type') ?? '', size_bytes: Number(res.headers.get('content-length') ?? 0) };
  } catch (error) {
    // Nothing half-written is left behind: the file this call made goes with any failure.
    await file.close().catch(() => {});
    await rm(target, { force: true });
    throw error;
  }
}
