// Every file path that the docs, the code comments and the migrations' comments name (`db/queues.ts`,
// `docs/api.md`, `test/helpers/app.ts`...) exists: a renamed module must not leave
// a newcomer following a dead end. Paths are read relative to the repository
// root or to the naming file's folder; generated outputs (bench/results/) and
// placeholders (NNN_name.sql) are not files of the repository.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIRS = ['api', 'bench', 'cli', 'db', 'docs', 'drills', 'examples', 'lib', 'scripts', 'storage', 'test', 'worker'];
const PATH = /(?<![\w./@-])((?:api|bench|cli|db|docs|drills|examples|lib|scripts|storage|test|worker)\/[\w./-]*?\.(?:json|ts|md|sql|lua|js|mjs))(?![\w-])/g;
const NOT_FILES = [/^bench\/results\//, /NNN_/];

function namingFiles(): string[] {
  const files = ['README.md'];
  for (const dir of DIRS) {
    for (const entry of readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })) {
      const file = path.relative(ROOT, path.join(entry.parentPath, entry.name));
      if (file.split(path.sep).includes('node_modules') || file.startsWith('bench/results/')) continue;
      if (entry.isFile() && /\.(ts|md|sql)$/.test(entry.name)) files.push(file);
    }
  }
  return files;
}

test('every repository path named in the docs and in code comments exists', () => {
  const missing: string[] = [];
  for (const file of namingFiles()) {
    const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n');
    lines.forEach((line, i) => {
      for (const [, named] of line.matchAll(PATH)) {
        if (NOT_FILES.some((pattern) => pattern.test(named))) continue;
        if (existsSync(path.join(ROOT, named)) || existsSync(path.join(ROOT, path.dirname(file), named))) continue;
        missing.push(`${file}:${i + 1} names ${named}`);
      }
    });
  }
  assert.deepEqual(missing, [], 'rename the reference, or the file back');
});
