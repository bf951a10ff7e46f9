// Issue 17 item 4: `bench:check` runs by hand and in the benchmark workflow, not in the tests. The workflow
// is `npm run bench`: it ends by holding the run it just wrote against bench/limits.json, so a run that
// exceeds a limit fails. The tests never run it (a timed figure is not a test).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const scripts = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }).scripts;

test('npm run bench ends with bench:check, after every part that writes what it reads', () => {
  const steps = scripts.bench!.split('&&').map((s) => s.trim());
  assert.equal(steps.at(-1), 'npm run -s bench:check');
  // What bench:check reads: latest.json (run.ts, with the log line and p99 pairs) and latest-sessions.json.
  for (const writer of ['bench/run.ts', 'bench/sessions.ts']) {
    const at = steps.findIndex((s) => s.includes(writer));
    assert.ok(at >= 0 && at < steps.length - 1, `${writer} runs before the check`);
  }
  assert.match(scripts['bench:check']!, /bench\/check\.ts/);
});

test('the tests do not run bench:check', () => {
  assert.doesNotMatch(scripts.test!, /bench/);
});
