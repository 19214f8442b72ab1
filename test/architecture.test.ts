// The layers point one way (README, "Layout"): lib <- db <- storage <- api |
// worker <- cli | scripts. A module may import its own layer and the layers
// below it, never one above or beside it: the web process must not load the
// worker's job handlers (it does load sharp, for the image checks of uploads),
// and the database layer must not know who calls it. This test reads every import of every module and fails,
// naming the file and the import, when one goes the wrong way.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');

/** What each layer may import (besides packages and node: builtins). */
export const ALLOWED: Record<string, readonly string[]> = {
  lib: ['lib'],
  db: ['lib', 'db'],
  storage: ['lib', 'db', 'storage'],
  api: ['lib', 'db', 'storage', 'api'],
  worker: ['lib', 'db', 'storage', 'worker'],
  cli: ['lib', 'db', 'storage', 'api', 'worker', 'cli'],
  scripts: ['lib', 'db', 'storage', 'api', 'worker', 'cli', 'scripts'],
};

function sources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

/** Specifiers of static imports and re-exports, and of dynamic `import('...')`. */
export function importsOf(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]/gm)) found.push(m[1]);
  for (const m of text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) found.push(m[1]);
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]);
  return found;
}

function layerOf(file: string): string {
  return file.split(path.sep)[0];
}

function violations(): string[] {
  const out: string[] = [];
  for (const layer of Object.keys(ALLOWED)) {
    for (const file of sources(layer)) {
      for (const specifier of importsOf(readFileSync(path.join(ROOT, file), 'utf8'))) {
        if (!specifier.startsWith('.')) continue;
        const target = path.relative(ROOT, path.resolve(ROOT, path.dirname(file), specifier));
        const targetLayer = layerOf(target);
        if (!ALLOWED[layer].includes(targetLayer)) out.push(`${file} imports ${specifier} (${layer} -> ${targetLayer})`);
      }
    }
  }
  return out;
}

describe('architecture: one direction of dependencies', () => {
  test('no module imports a layer above or beside its own', () => {
    assert.deepEqual(violations(), []);
  });

  test('the public API does not build on the operators\' admin code (admin builds on it); only app.ts mounts admin', () => {
    const offenders: string[] = [];
    for (const file of sources('api')) {
      if (file.startsWith(`api${path.sep}admin${path.sep}`) || file === path.join('api', 'app.ts')) continue;
      for (const specifier of importsOf(readFileSync(path.join(ROOT, file), 'utf8'))) {
        const target = path.relative(ROOT, path.resolve(ROOT, path.dirname(file), specifier));
        if (specifier.startsWith('.') && target.startsWith(`api${path.sep}admin${path.sep}`)) offenders.push(`${file} imports ${specifier}`);
      }
    }
    assert.deepEqual(offenders, [], 'move what both need beside the public code (a -queries module, db/) and import it from admin');
  });

  test('a resource\'s SQL is in its -queries.ts module (README, Adding a resource), not in its routes', () => {
    // money-fields.ts holds the checks every money write shares (customer, external_ref), with their reads.
    // The public booking pages' own reads are in api/booking-page/queries.ts.
    const offenders = [path.join('api', 'routes'), path.join('api', 'booking-page')]
      .flatMap(sources)
      .filter((file) => !file.endsWith('-queries.ts') && !file.endsWith(`${path.sep}queries.ts`) && !file.endsWith('money-fields.ts'))
      .filter((file) => /\.query\s*[<(]/.test(readFileSync(path.join(ROOT, file), 'utf8')));
    assert.deepEqual(offenders, [], 'move the SQL to <resource>-queries.ts (customers and leads have customer-queries.ts / lead-queries.ts)');
  });

  test('route handlers read and write through their `db`, never the pool behind it', () => {
    // Under Idempotency-Key `db` is the request's transaction, which also
    // stores the answer: a write through the pool would commit on its own,
    // and a read through it would not see the request's own writes.
    const offenders = ['api/routes', 'api/uploads']
      .flatMap(sources)
      .filter((file) => /\bdeps\.pool\b/.test(readFileSync(path.join(ROOT, file), 'utf8')));
    assert.deepEqual(offenders, []);
  });

  test('a resource\'s route file is the route table\'s alone: what another module needs of it lives in its -queries or -schemas module', () => {
    // The files api/routes/index.ts mounts; a public page, MCP tool or admin procedure importing one of them
    // would load (and depend on) its routes.
    const index = path.join('api', 'routes', 'index.ts');
    const target = (file: string, specifier: string) => path.relative(ROOT, path.resolve(ROOT, path.dirname(file), specifier));
    const routeFiles = new Set(importsOf(readFileSync(path.join(ROOT, index), 'utf8')).filter((s) => s.startsWith('.')).map((s) => target(index, s)));
    routeFiles.delete(path.join('api', 'route.ts'));
    assert.ok(routeFiles.has(path.join('api', 'routes', 'customers.ts')), 'the route table was read');
    const offenders = Object.keys(ALLOWED)
      .flatMap(sources)
      .filter((file) => file !== index)
      .flatMap((file) => importsOf(readFileSync(path.join(ROOT, file), 'utf8')).filter((s) => s.startsWith('.') && routeFiles.has(target(file, s))).map((s) => `${file} imports ${s}`));
    assert.deepEqual(offenders, []);
  });

  test('no cycle among the modules\' runtime imports (a cycle makes the loading order decide what is initialised)', () => {
    const edges = new Map<string, string[]>();
    for (const file of Object.keys(ALLOWED).flatMap(sources)) {
      const text = readFileSync(path.join(ROOT, file), 'utf8').replace(/^\s*(?:import|export)\s+type\b[^;]*;/gm, '');
      edges.set(file, importsOf(text).filter((s) => s.startsWith('.')).map((s) => path.relative(ROOT, path.resolve(ROOT, path.dirname(file), s))));
    }
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, trail: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        cycles.push([...trail.slice(trail.indexOf(file)), file].join(' -> '));
        return;
      }
      state.set(file, 'open');
      for (const next of edges.get(file) ?? []) visit(next, [...trail, file]);
      state.set(file, 'done');
    };
    for (const file of edges.keys()) visit(file, []);
    assert.deepEqual(cycles, []);
  });

  test('the check sees static, type-only, re-export and dynamic imports', () => {
    const text = [
      "import { a } from '../worker/a.ts';",
      "import type { B } from '../api/b.ts';",
      "export { c } from './c.ts';",
      "import './side-effect.ts';",
      "const d = await import('../db/d.ts');",
      'import {\n  e,\n  f,\n} from "../lib/e.ts";',
    ].join('\n');
    assert.deepEqual(importsOf(text).sort(), ['../api/b.ts', '../db/d.ts', '../lib/e.ts', '../worker/a.ts', './c.ts', './side-effect.ts']);
  });
});
