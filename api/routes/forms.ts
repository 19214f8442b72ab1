// Forms (contract: Forms endpoints). Definitions are read-only here (operators
// write them with `wsctl form create/update`); submissions are created here,
// as JSON or multipart, and processed by the worker (worker/jobs/form-post-actions.ts).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { SUBMISSION_COLUMNS, type SubmissionRow } from '../../db/forms.ts';
import { transaction, type Queryable } from '../../db/pool.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { checkAnswers } from '../forms/answers.ts';
import { formSchema, resolveLocale, serializeForm, type FormRow } from '../forms/definition.ts';
import { findSubmission, requireForm } from '../forms/form-queries.ts';
import { FileStager, fingerprintMaterial, type Intake, type StagedFile } from '../forms/intake.ts';
import { intakeJson } from '../forms/intake-json.ts';
import { intakeMultipart, type BodyCap } from '../forms/intake-multipart.ts';
import { deleteStaged, insertSubmission, serializeSubmission, submissionSchema } from '../forms/submissions.ts';
import { canonicalJson, IDEMPOTENCY_BODY_LIMIT, runIdempotent } from '../middleware/idempotency.ts';
import { listPage, paginationQuery } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';

/**
 * Whole request body of a submission. The contract puts the infrastructure's
 * cap at about 32 MB; we enforce 32 MiB ourselves, early (413 from
 * Content-Length, or while streaming a body sent without it).
 */
export const MAX_SUBMISSION_BYTES = 32 * 1024 * 1024;
/**
 * A JSON submission is held in memory whole and its base64 files decoded
 * (about 3× the body at the peak), so its cap is a quarter of multipart's:
 * 8 MiB of JSON carries about 6 MB of files.
 */
export const MAX_JSON_SUBMISSION_BYTES = 8 * 1024 * 1024;

const localeQuery = z.object({
  locale: z.string().max(35).optional().describe('Idioma de los textos; si falta o no está soportado, default_locale'),
});

export const formRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/forms',
    scope: 'read-forms',
    tag: 'Forms',
    summary: 'Lista formularios',
    query: paginationQuery.extend(localeQuery.shape),
    response: formSchema,
    list: true,
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) =>
      listPage<FormRow>(db, ctx.deps.totals, { table: 'forms', columns: '*', companyId, serialize: (row) => serializeForm(row, query.locale) }, query),
  }),
  defineRoute({
    method: 'GET',
    path: '/forms/:id',
    scope: 'read-forms',
    tag: 'Forms',
    summary: 'Obtiene un formulario',
    description: 'Acepta el id o el slug. Los textos se resuelven para `locale`; todos los mapas `*_translations` van siempre completos.',
    params: { id: 'id_or_slug' },
    query: localeQuery,
    response: formSchema,
    status: 200,
    errors: ['not_found', 'invalid_parameter'],
    handler: async (ctx, { params, query, companyId, db }) => ({ data: serializeForm(await requireForm(db, companyId, params.id), query.locale) }),
  }),
  defineRoute({
    method: 'GET',
    path: '/forms/:form_id/submissions',
    scope: 'read-forms',
    tag: 'Forms',
    summary: 'Lista los envíos de un formulario',
    params: { form_id: 'id_or_slug' },
    query: paginationQuery,
    response: submissionSchema,
    list: true,
    status: 200,
    errors: ['not_found', 'invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { params, query, companyId, db }) => {
      const form = await requireForm(db, companyId, params.form_id);
      return listPage<SubmissionRow>(
        db,
        ctx.deps.totals,
        { table: 'form_submissions', columns: SUBMISSION_COLUMNS, companyId, collection: (p) => [`form_id = ${p.add(form.id)}`], serialize: serializeSubmission },
        query,
      );
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/forms/:form_id/submissions/:id',
    scope: 'read-forms',
    tag: 'Forms',
    summary: 'Obtiene un envío',
    params: { form_id: 'id_or_slug', id: 'id' },
    response: submissionSchema,
    status: 200,
    errors: ['not_found', 'invalid_id'],
    handler: async (ctx, { params, companyId, db }) => {
      const form = await requireForm(db, companyId, params.form_id);
      const submission = await findSubmission(db, companyId, form.id, params.id);
      if (!submission) throw new ApiError('not_found');
      return { data: serializeSubmission(submission) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/forms/:form_id/submissions',
    scope: 'create-form_submissions',
    tag: 'Forms',
    summary: 'Envía respuestas a un formulario',
    description: [
      'JSON `{data: {answers, locale?, files?}}`: un archivo es `{filename, content_type, data}` con `data` en base64 o data URL; varios, un arreglo.',
      'O `multipart/form-data`: archivos y textos como `data[answers][<key>]`, `answers[<key>]` o `files[<key>]`; `locale` o `data[locale]`.',
      `Cuerpo máximo ${MAX_SUBMISSION_BYTES / 1024 / 1024} MB en multipart y ${MAX_JSON_SUBMISSION_BYTES / 1024 / 1024} MB en JSON (413 request_too_large); a lo sumo UPLOAD_CONCURRENCY cargas de más de 64 KiB a la vez por proceso, y la mitad de ellas por empresa (503 con Retry-After). El contenido real de cada archivo se verifica (bytes mágicos); un paquete .docx/.xlsx/.pptx/.odt/.ods/.odp que declara más de 256 MiB al descomprimir, o una entrada de más de 10 MiB comprimida más de 200:1, es 422 validation_failed (bomba de descompresión). Los nombres de archivo en multipart se leen como UTF-8.`,
      'Con Idempotency-Key el cuerpo no puede pasar de 100 KB (413 idempotency_body_too_large, antes de leerlo): la clave protege envíos pequeños; los archivos grandes se envían sin la cabecera.',
      'Responde 201 con `status: received`; las acciones posteriores corren en segundo plano.',
    ].join(' '),
    params: { form_id: 'id_or_slug' },
    query: localeQuery,
    // Validated for JSON bodies before the handler runs (api/route.ts, upload routes).
    body: z.strictObject({
      answers: z.record(z.string(), z.unknown()).describe('Respuestas por `key` de campo; un archivo es {filename, content_type, data}'),
      // Both optional: null is the same as absent (docs/api.md, Records).
      locale: z.string().max(35).nullish().describe('Idioma del envío (es, en, es-MX…); también en la query'),
      files: z.record(z.string(), z.unknown()).nullish().describe('Archivos por `key`, alternativa a ponerlos en answers'),
    }),
    example: { answers: { email: 'ana@example.com' } },
    upload: { maxBytes: MAX_SUBMISSION_BYTES, maxJsonBytes: MAX_JSON_SUBMISSION_BYTES },
    response: submissionSchema,
    status: 201,
    errors: ['not_found', 'form_inactive', 'validation_failed', 'parameter_missing', 'request_too_large', 'unsupported_media_type'],
    handler: async (ctx, { params, query, data, companyId, db }) => {
      const { pool } = ctx.deps;
      // Contract (Endpoints, shared rules): a body over 100 KB cannot be sent
      // with Idempotency-Key. Applied to the body as sent, files included, so
      // the key protects small submissions; large uploads go without it. A
      // declared length over 100 KB was refused before a byte was read
      // (api/middleware/body.ts idempotentBodyCap, chained by api/route.ts); a chunked multipart body is cut off
      // once it passes 100 KB (intakeMultipart).
      const keyed = ctx.headers['idempotency-key'] !== undefined;
      // The key's shape was checked before the body was read (idempotentBodyCap); a JSON body sent
      // chunked was read under the 100 KB cap already (api/middleware/body.ts, uploadBody).
      const cap: BodyCap = keyed
        ? { bytes: IDEMPOTENCY_BODY_LIMIT, code: 'idempotency_body_too_large' }
        : { bytes: MAX_SUBMISSION_BYTES, code: 'request_too_large' };
      // The form first: another company's form is a 404 before any byte is stored.
      const form = await requireForm(pool, companyId, params.form_id);
      if (!form.active) {
        throw new ApiError('form_inactive');
      }
      const stager = new FileStager(pool, ctx.deps.blobs, companyId, form);
      let intake: Intake | null = null;
      let keep = false;
      try {
        intake = ctx.is('multipart/form-data')
          ? await intakeMultipart(stager, ctx.req, cap)
          : await intakeJson(stager, data!);
        const checked = checkAnswers(form, intake.answers, intake.files, intake.errors, intake.sentFileKeys);
        // With an Idempotency-Key this is answered after the key is checked, as
        // on every other write: a key reused with another (invalid) body is
        // idempotency_key_reused. Not stored either way (api/middleware/idempotency.ts).
        const invalid = Object.keys(intake.errors).length ? validationFailed(intake.errors) : null;
        const locale = resolveLocale(form, intake.locale ?? query.locale);
        const referrer = (ctx.get('Referer') || ctx.get('Referrer') || '').slice(0, 2000) || null;
        let refused: StagedFile[] = [];
        const create = async (db: Queryable) => {
          if (invalid) throw invalid;
          const stored = await transaction(db, (client) =>
            insertSubmission(client, ctx.deps.jobs, { form, companyId, locale, checked, files: intake!.files, overQuota: intake!.overQuota, referrer }),
          );
          refused = stored.refused;
          ctx.status = 201;
          ctx.body = { data: serializeSubmission(stored.row) };
        };
        if (keyed) {
          const material = canonicalJson(fingerprintMaterial(intake, query.locale));
          await runIdempotent(ctx, createHash('sha256').update(material).digest('hex'), create);
        } else {
          await create(pool);
        }
        // Committed: the filed blobs stay, the refused ones go now that no open
        // transaction holds them. Replayed: nothing of this body was filed.
        keep = ctx.response.get('Idempotent-Replayed') !== 'true';
        if (keep) await deleteStaged(pool, refused);
      } finally {
        // Anything staged but not filed (a refused submission, a replay) goes.
        if (!keep) await stager.discard();
      }
    },
  }),
];
