// A root install on the supported runtime is clean (issue 15 item 8): no package in the root lockfile asks
// for a Node the project does not run on (package.json `engines`), so `npm install` on Node 20 prints no
// EBADENGINE warning. The conformance suite, which wants Node 22, lives in test/conformance/node22/.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import semver from 'semver';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('every package in the root lockfile accepts the oldest Node the project supports', () => {
  const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { engines: { node: string } };
  const oldest = semver.minVersion(pkg.engines.node)!.version;
  const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, 'utf8')) as { packages: Record<string, { engines?: { node?: string } | string[] }> };
  const refusing = Object.entries(lock.packages)
    .filter(([, p]) => typeof p.engines === 'object' && !Array.isArray(p.engines) && typeof p.engines.node === 'string' && !semver.satisfies(oldest, p.engines.node, { includePrerelease: true }))
    .map(([name, p]) => `${name} (${(p.engines as { node: string }).node})`);
  assert.deepEqual(refusing, [], `these ask for another Node than ${oldest}`);
  assert.ok(!Object.keys(lock.packages).some((name) => name.endsWith('node_modules/@modelcontextprotocol/conformance')), 'the suite is not a root dependency');
});
