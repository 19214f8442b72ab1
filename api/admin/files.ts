// `GET /admin/files/:id?company=<id>`: a stored file's bytes for an operator (`wsctl form download`).
// Form files are private: the REST API returns their metadata only (contract, Form submission), and an
// email carries what fits within 18 MB; the rest "stays only in the file manager", which is this for an
// operator. Behind the admin token, with its throttling of wrong tokens (api/admin/koa.ts), and always a
// download (storage/files.ts downloadHeaders), never rendered.
import type { Next } from 'koa';
import { startedStream } from '../public-media.ts';
import { ApiError } from '../errors.ts';
import { log } from '../../lib/log.ts';
import { isObjectId } from '../../lib/objectid.ts';
import { downloadHeaders, findFile } from '../../storage/files.ts';
import type { ApiContext, Deps } from '../types.ts';
import { adminTokenAccepted } from './koa.ts';

export function adminFileDownload(deps: Deps) {
  return async function download(ctx: ApiContext & { params: Record<string, string> }, _next: Next) {
    const accepted = await adminTokenAccepted(ctx, deps, (code, message) => {
      throw new ApiError(code === 'UNAUTHORIZED' ? 'invalid_key' : 'rate_limited', message);
    });
    if (!accepted) return;
    const company = typeof ctx.query.company === 'string' ? ctx.query.company : '';
    // Every download asked for with the token writes its audit line, as an admin call does (docs/cli.md):
    // who (address), which file of which company, and how it ended.
    const audit = (error: string | null) =>
      log('admin.file_download', {
        ok: error === null,
        error,
        company_id: isObjectId(company) ? company : null,
        file_id: isObjectId(ctx.params.id) ? ctx.params.id : null,
        address: ctx.ip,
        request_id: ctx.state.requestId ?? null,
      });
    if (!company) {
      audit('parameter_missing');
      throw new ApiError('parameter_missing', 'Falta el parámetro company (la empresa del archivo).');
    }
    // Ids are ObjectIds: anything else (a NUL, a path) names no file, without asking the database.
    const file = isObjectId(company) && isObjectId(ctx.params.id) ? await findFile(deps.pool, company, ctx.params.id) : null;
    if (!file) {
      audit('not_found');
      throw new ApiError('not_found', 'La empresa no tiene un archivo con ese id.');
    }
    audit(null);
    ctx.set(downloadHeaders({ name: file.name, contentType: file.content_type, sizeBytes: Number(file.size_bytes) }));
    ctx.status = 200;
    if (ctx.method !== 'HEAD') ctx.body = await startedStream(deps.blobs.read(deps.pool, file.blob_id));
    ctx.length = Number(file.size_bytes); // after the body: assigning a stream drops Content-Length
  };
}
