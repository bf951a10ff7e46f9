// The architecture, checked on every `npm test` (issue 11): dependency-cruiser with the rules in
// .dependency-cruiser.cjs (protocol/ a leaf, upstream/ never reaching edge/, auth/ or catalog/, the catalog
// never reaching upstream/, nothing importing the CLI), and no import cycle between folders, type-only
// imports included.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { cruise, type IConfiguration, type ICruiseResult } from 'dependency-cruiser';

const require = createRequire(import.meta.url);
const config = require('../.dependency-cruiser.cjs') as IConfiguration;

const result = (await cruise(['src'], { ...config.options, validate: true, ruleSet: { forbidden: config.forbidden ?? [] } })).output as ICruiseResult;

/** `src/upstream/http.ts` → `upstream`; files at the root of src/ are their own "folder". */
function folderOf(path: string): string {
  const rest = path.replace(/^src\//, '');
  const slash = rest.indexOf('/');
  return slash === -1 ? rest : rest.slice(0, slash);
}

test('every module of src/ is cruised, type-only imports included', () => {
  const sources = result.modules.map((m) => m.source);
  assert.ok(sources.length > 80, `only ${sources.length} modules cruised`);
  const access = result.modules.find((m) => m.source === 'src/policy/access.ts');
  assert.ok(access?.dependencies.some((d) => d.resolved === 'src/pipeline/principal.ts'), 'the type-only import of Principal is seen');
});

test('no rule of .dependency-cruiser.cjs is broken', () => {
  const violations = result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
  assert.deepEqual(violations, []);
});

test('no import cycle between folders', () => {
  const edges = new Map<string, Set<string>>();
  for (const m of result.modules) {
    const from = folderOf(m.source);
    for (const d of m.dependencies) {
      const to = folderOf(d.resolved);
      if (!d.resolved.startsWith('src/') || to === from) continue;
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
    }
  }
  // Depth-first search for a back edge; the path to it is the cycle to report.
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (folder: string, path: string[]): void => {
    state.set(folder, 'open');
    for (const next of edges.get(folder) ?? []) {
      if (state.get(next) === 'open') cycles.push([...path.slice(path.indexOf(next)), next].join(' → '));
      else if (!state.has(next)) visit(next, [...path, next]);
    }
    state.set(folder, 'done');
  };
  for (const folder of edges.keys()) if (!state.has(folder)) visit(folder, [folder]);
  assert.deepEqual(cycles, []);
});
