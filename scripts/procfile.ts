// The Node flags each process of the Procfile runs with, read from where they
// are set: package.json's `web` and `worker` scripts (`exec node <flags>
// <entry>`, which the Procfile runs through `npm run`). The benches and the
// drills start their processes with these, so they measure the processes as
// deployed.
import { readFileSync } from 'node:fs';

const ROOT = new URL('../', import.meta.url);

export function procfileNodeArgs(name: 'web' | 'worker'): string[] {
  const scripts = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')).scripts as Record<string, string>;
  const words = scripts[name].trim().split(/\s+/);
  const node = words.indexOf('node');
  if (node === -1) throw new Error(`package.json scripts.${name} does not run node: ${scripts[name]}`);
  // Everything between `node` and the entry point: flags, and the values of flags that take one.
  return words.slice(node + 1, -1);
}
