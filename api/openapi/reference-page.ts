// The API reference page, rendered by the server itself from the OpenAPI
// document (api/openapi/document.ts), with no external scripts or fonts, so it
// works offline and under a `default-src 'none'` Content-Security-Policy.
import type { Config } from '../../lib/config.ts';
import { escapeHtml } from '../../lib/html.ts';
import { openApiDocument } from './document.ts';


/** Escapes, then renders `code` spans of the descriptions. */
function prose(value: unknown): string {
  return escapeHtml(value).replace(/`([^`]+)`/g, '<code>$1</code>');
}

const COMPONENTS = '#/components/schemas/';

/**
 * `schema` with its references to components written out, so a reader sees
 * the fields where the operation is; a component inside itself (JsonValue)
 * stays a reference.
 */
function expand(schema: unknown, components: Record<string, unknown>, open: string[] = []): unknown {
  if (Array.isArray(schema)) return schema.map((item) => expand(item, components, open));
  if (schema === null || typeof schema !== 'object') return schema;
  const ref = (schema as { $ref?: unknown }).$ref;
  if (typeof ref === 'string' && ref.startsWith(COMPONENTS)) {
    const name = ref.slice(COMPONENTS.length);
    if (!open.includes(name) && components[name]) return expand(components[name], components, [...open, name]);
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, expand(value, components, open)]));
}

export function referencePage(config: Config): string {
  const doc = openApiDocument(config) as {
    info: { title: string; version: string; description: string };
    paths: Record<string, Record<string, any>>;
    components: { schemas: Record<string, unknown> };
  };
  const show = (schema: unknown) => escapeHtml(JSON.stringify(expand(schema, doc.components.schemas), null, 2));
  const byTag = new Map<string, string[]>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const params = (op.parameters ?? [])
        .map((p: any) => `<li><code>${escapeHtml(p.name)}</code> <em>${escapeHtml(p.in)}</em>${p.required ? ' (obligatorio)' : ''} — ${escapeHtml(p.description ?? '')}</li>`)
        .join('');
      const [bodyType, bodyContent] = (Object.entries(op.requestBody?.content ?? {})[0] ?? []) as [string?, any?];
      const body = bodyContent ? `<details><summary>Cuerpo (${escapeHtml(bodyType!)})</summary><pre>${show(bodyContent.schema)}</pre></details>` : '';
      const responses = Object.entries(op.responses ?? {})
        .map(([status, r]: [string, any]) => `<li><code>${status}</code> ${escapeHtml(r.description)}</li>`)
        .join('');
      const ok = Object.entries(op.responses ?? {}).find(([s]) => s.startsWith('2')) as [string, any] | undefined;
      const okContent = ok?.[1].content ? (Object.values(ok[1].content)[0] as any) : undefined;
      const okSchema = okContent ? `<details><summary>Respuesta ${ok![0]}</summary><pre>${show(okContent.schema)}</pre></details>` : '';
      const html = `<section id="${escapeHtml(op.operationId)}"><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>
        <p>${escapeHtml(op.summary)}. ${prose(op.description)}</p>${params ? `<ul>${params}</ul>` : ''}${body}${okSchema}<ul>${responses}</ul></section>`;
      const tag = op.tags?.[0] ?? 'Otros';
      byTag.set(tag, [...(byTag.get(tag) ?? []), html]);
    }
  }
  // An id has no spaces (HTML): `Accounting periods` is `tag-accounting-periods`.
  const anchor = (tag: string) => `tag-${tag.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')}`;
  const nav = [...byTag.keys()].map((t) => `<a href="#${anchor(t)}">${escapeHtml(t)}</a>`).join(' · ');
  const sections = [...byTag].map(([t, ops]) => `<h2 id="${anchor(t)}">${escapeHtml(t)}</h2>${ops.join('')}`).join('');
  return `<!doctype html><html lang="es"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)} ${escapeHtml(doc.info.version)}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1f2937}
code,pre{font:13px ui-monospace,monospace;background:#f3f4f6;border-radius:4px}pre{padding:.75rem;overflow:auto}
section{border-top:1px solid #e5e7eb;padding:.5rem 0}.m{font:bold 12px monospace;padding:2px 6px;border-radius:4px;color:#fff;background:#6b7280}
.get{background:#2563eb}.post{background:#059669}.patch,.put{background:#d97706}.delete{background:#dc2626}</style></head>
<body><h1>${escapeHtml(doc.info.title)} <small>${escapeHtml(doc.info.version)}</small></h1>
<p>${prose(doc.info.description).replace(/\n\n/g, '</p><p>')}</p><p>Descripción OpenAPI 3.1: <a href="openapi.json">openapi.json</a></p>
<nav>${nav}</nav>${sections}</body></html>`;
}
