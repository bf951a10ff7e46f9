// The bounded CI run of the edge fuzzer: a fixed seed and a few thousand cases against three real gateways
// (legacy, modern and two upstreams), under two minutes on two cores. FUZZ_RUNS and FUZZ_SEED override.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { formatReport, optionsFromEnv, runEdgeFuzz, startHarness, type Harness } from './edge-fuzz.js';

const opts = optionsFromEnv({ runs: 3_000, seed: 20261130, timeLimitMs: 70_000, shrinkTimeLimitMs: 25_000 });
let harness: Harness;
before(async () => {
  harness = await startHarness();
});
after(async () => {
  await harness?.stop();
});

test(`the edge holds its properties over ${opts.runs} generated requests (seed ${opts.seed})`, { timeout: 150_000 }, async () => {
  const report = await runEdgeFuzz(harness, opts);
  const text = formatReport(report);
  if (report.violations.length === 0) console.log(text);
  assert.ok(report.casesRun >= Math.min(opts.runs, 1_000), `only ${report.casesRun} cases ran in the time limit`);
  assert.deepEqual(report.violations.map((v) => v.signature), [], text);
});
