// Writes charts/gatehouse/files/config-keys.json: the tree of key names Gatehouse's config takes, from
// config/gatehouse.schema.json, for the chart to check `extraConfig` against at render time (a misspelt key
// there, `polcy` or `tools.nameing`, would otherwise render, install, and fail Gatehouse at every start).
// Only names are kept: a closed object (additionalProperties: false) is a map of its keys to their trees;
// anything else (a free-form map such as headers, a scalar) is `true`, not checked below. A list is checked
// item by item against its items' tree. test/chart/chart.test.ts fails when the file is stale.
// Run: node scripts/gen-chart-config-keys.mjs (--stdout prints it instead).

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SCHEMA = `${ROOT}config/gatehouse.schema.json`;
export const TARGET = `${ROOT}charts/gatehouse/files/config-keys.json`;

/** The key tree of `schema` (see the header), resolving `#/definitions/...` references against `root`. */
export function keyTree(schema, root) {
  const resolve = (s) => {
    let node = s;
    while (node && typeof node === 'object' && typeof node.$ref === 'string') {
      const name = node.$ref.replace(/^#\/definitions\//, '');
      node = root.definitions[name];
      if (node === undefined) throw new Error(`unresolved $ref ${s.$ref}`);
    }
    return node;
  };
  const tree = (s) => {
    const node = resolve(s);
    if (node === null || typeof node !== 'object') return true;
    if (node.items !== undefined) return tree(node.items);
    // The alternatives an object may take (an upstream is HTTP or stdio, a store SQLite or Redis): the keys of
    // any of them are known. One that is open leaves the whole open.
    const branches = [node.then, node.else, ...(node.oneOf ?? []), ...(node.anyOf ?? [])]
      .filter((b) => b !== undefined)
      .map(resolve)
      .filter((b) => b && typeof b === 'object');
    const parts = [];
    if (node.properties !== undefined || node.additionalProperties !== undefined) {
      if (node.additionalProperties !== false) return true;
      parts.push(Object.fromEntries(Object.entries(node.properties ?? {}).map(([k, v]) => [k, tree(v)])));
    }
    for (const b of branches) {
      // A branch that neither closes nor opens the object (if/then constraints on keys it already has, or a
      // scalar alternative) says nothing about which keys it takes.
      if (b.additionalProperties === undefined && b.items === undefined) continue;
      const t = tree(b);
      if (t === true) return true;
      parts.push(t);
    }
    if (parts.length === 0) return true;
    return parts.reduce(merge);
  };
  return tree(schema);
}

function merge(a, b) {
  if (a === true || b === true) return true;
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = k in out ? merge(out[k], v) : v;
  return out;
}

/** The file's text: sorted keys, so a change to the schema shows as a small diff. */
export function render() {
  const schema = JSON.parse(readFileSync(SCHEMA, 'utf8'));
  const sort = (t) => (t === true ? true : Object.fromEntries(Object.keys(t).sort().map((k) => [k, sort(t[k])])));
  return `${JSON.stringify(sort(keyTree(schema, schema)), null, 1)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--stdout')) process.stdout.write(render());
  else {
    writeFileSync(TARGET, render());
    console.log(`wrote ${TARGET}`);
  }
}
