// `npm run fuzz`: the long run of the edge fuzzer (100,000 cases by default); with FUZZ_SEED and FUZZ_PATH
// the replay of one case (shrunk again if it still fails); with FUZZ_PLAN one printed counterexample, as is.
// Prints the summary and every violation with its shrunk counterexample; exits 1 when there is any.

import type { CasePlan } from './arbitraries.js';
import { formatReport, optionsFromEnv, runEdgeFuzz, runPlan, startHarness } from './edge-fuzz.js';

const opts = optionsFromEnv({ runs: 100_000, seed: Date.now() % 2 ** 31, timeLimitMs: 4 * 60 * 60 * 1000, shrinkTimeLimitMs: 10 * 60 * 1000 });
const say = (line: string): void => void process.stdout.write(`${line}\n`);

const harness = await startHarness();
// An interrupted run still stops the gateways it started, instead of leaving them orphaned.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void harness.stop().finally(() => process.exit(130));
  });
}
let exitCode = 1;
try {
  if (process.env.FUZZ_PLAN) {
    const r = await runPlan(harness, JSON.parse(process.env.FUZZ_PLAN) as CasePlan);
    say(`request:\n${r.request}\n\nanswer:\n${r.response}\n`);
    say(r.violations.length === 0 ? 'violations: none' : r.violations.map((v) => `VIOLATION ${v.signature}\n  ${v.detail}`).join('\n'));
    exitCode = r.violations.length === 0 ? 0 : 1;
  } else {
    say(opts.path === undefined ? `edge fuzz: ${opts.runs} cases, seed ${opts.seed} (FUZZ_SEED=${opts.seed} repeats this run)` : `edge fuzz: replaying seed ${opts.seed} path ${opts.path}`);
    const report = await runEdgeFuzz(harness, { ...opts, progress: say });
    say('');
    say(formatReport(report));
    exitCode = report.violations.length === 0 ? 0 : 1;
  }
} finally {
  await harness.stop();
}
process.exit(exitCode);
