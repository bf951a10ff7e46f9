// Writes src/config/schema.generated.ts: the TypeScript types of a validated config, generated from
// config/gatehouse.schema.json, so the schema is the one source of truth for both (`npm run config:types`;
// test/unit/config/types.test.ts fails when the file is stale). Two views are adjusted first: a config is
// typed as it is after validation, so every key with a default is present; and the schema's
// if/then/else choices (an upstream is HTTP or stdio, a store SQLite or Redis) become plain unions.

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const TARGET = `${ROOT}src/config/schema.generated.ts`;

const BANNER = `// Generated from config/gatehouse.schema.json by scripts/gen-config-types.mjs (npm run config:types).
// Do not edit: change the schema and run the script. Keys with a default are required here, because
// these are the types of a config after validation has filled the defaults in.
`;

function asValidated(node) {
  if (Array.isArray(node)) return node.map(asValidated);
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'if' || key === 'then' || key === 'else') continue;
    out[key] = asValidated(value);
  }
  if (node.then !== undefined && node.else !== undefined) {
    out.anyOf = [asValidated(node.then), asValidated(node.else)];
    // The branch choice (`oneOf` on required keys) says nothing more about the types.
    delete out.oneOf;
  }
  if (out.properties !== undefined) {
    const required = new Set(out.required ?? []);
    for (const [key, value] of Object.entries(out.properties)) if (value !== null && typeof value === 'object' && 'default' in value) required.add(key);
    if (required.size > 0) out.required = [...required];
  }
  return out;
}

export async function generateConfigTypes() {
  const schema = asValidated(JSON.parse(readFileSync(`${ROOT}config/gatehouse.schema.json`, 'utf8')));
  // maxItems: -1, a bound on a list (store.sentinel.nodes) stays a check of the loader: as a type it became a
  // union of one tuple per length, which no list built in code (a spread, a map) can be assigned to.
  const body = await compile(schema, 'GatehouseConfig', { bannerComment: '', additionalProperties: false, declareExternallyReferenced: true, strictIndexSignatures: false, maxItems: -1 });
  return BANNER + '\n' + body;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(TARGET, await generateConfigTypes());
  console.log(`wrote ${TARGET}`);
}
