// openapi-typescript, for test/openapi.clients.test.ts. It sits in a package
// of its own (package.json beside this file, installed by the root's
// `file:` devDependency) because it builds its output with the TypeScript 5
// compiler API, and the project's TypeScript 7 ships no such API
// (openapi-ts/openapi-typescript#2841); npm would otherwise put both under
// the one name `typescript`. This file's imports resolve from the
// node_modules beside it.
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';

/** The `paths`, `components` and `operations` types of `doc`, as TypeScript source. */
export async function generateTypes(doc: Record<string, unknown>): Promise<string> {
  return astToString(await openapiTS(doc as unknown as OpenAPI3, { silent: true }));
}
