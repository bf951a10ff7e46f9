// p99 latency at c=64, Gatehouse against the bare hop, in adjacent pairs (issue 17 item 5: at most 1.2× the
// bare hop's). A cell's p99 comes from three rounds of 2 s; at c=64 on this VM all processes queue for two
// cores, and one round's p99 swings by a third between runs of the same build, so three rounds decide the
// verdict by chance. Here the two targets, already running and warm, take turns under the same load many
// times: short phases in the order A B B A A B…, each paired with its neighbour of the other target, so that
// the VM's slow stretches, which last seconds, land on both halves of a pair. The result is the median of
// the pairs' p99 ratios; the ratio of the two targets' median p99s is kept as a cross-check.

import { median, type Era } from './common.js';
import { runLoad, type LoadResult } from './load.js';
import { readSchedNs } from './procs.js';

export interface PairTarget {
  name: string;
  url: string;
  /** The process whose CPU per call is read alongside (on-CPU nanoseconds, all threads). */
  pid: number;
  authorization?: string;
}

export interface P99PairsOptions {
  /** The target measured (the numerator) and the one it is held against. */
  target: PairTarget;
  against: PairTarget;
  era: Era;
  concurrency: number;
  /** Pairs measured; each is one phase of each target. */
  pairs: number;
  /** Measured phase per target and pair, seconds (after a short warm-up of the phase's fresh connections). */
  seconds: number;
  warmupSeconds: number;
  maxErrors: number;
}

export interface P99PairsResult {
  era: Era;
  concurrency: number;
  target: string;
  against: string;
  seconds: number;
  /** Each phase's p99, ms, in the order measured. */
  targetP99Ms: number[];
  againstP99Ms: number[];
  /** Calls per phase, to show each p99 rests on thousands of calls. */
  targetCalls: number[];
  againstCalls: number[];
  /** Each phase's CPU per call of the target's own process, µs: the p99 follows it. */
  targetCpuUs: number[];
  againstCpuUs: number[];
  /** Each pair's target ÷ against. */
  pairRatios: number[];
  /** The median of the pairs' ratios: the figure `bench:check` holds. */
  ratio: number;
  /** The median of the target's p99s ÷ the median of the other's. */
  ratioOfMedians: number;
}

async function phase(t: PairTarget, opts: P99PairsOptions): Promise<{ load: LoadResult; cpuUs: number }> {
  let ns0: number | undefined;
  let ns1: number | undefined;
  const load = await runLoad({
    url: t.url,
    era: opts.era,
    concurrency: opts.concurrency,
    ...(t.authorization !== undefined ? { authorization: t.authorization } : {}),
    warmup: { seconds: opts.warmupSeconds, maxRequests: 20_000 },
    measure: { seconds: opts.seconds, maxRequests: 1_000_000 },
    maxErrors: opts.maxErrors,
    onMeasureStart: () => (ns0 = readSchedNs(t.pid)),
    onMeasureEnd: () => (ns1 = readSchedNs(t.pid)),
  });
  const cpuUs = ns0 !== undefined && ns1 !== undefined && load.requests > 0 ? (ns1 - ns0) / 1e3 / load.requests : NaN;
  return { load, cpuUs };
}

function failure(t: PairTarget, r: LoadResult): string | undefined {
  if (r.setupError !== undefined) return `${t.name}: ${r.setupError}`;
  if (r.errors > 0 || r.warmupErrors > 0) return `${t.name}: ${r.errors + r.warmupErrors} calls failed: ${r.errorSamples.join('; ')}`;
  if (r.requests < 100) return `${t.name}: only ${r.requests} calls in a phase`;
  return undefined;
}

export async function measureP99Pairs(opts: P99PairsOptions): Promise<P99PairsResult> {
  const pairs = Math.max(2, Math.ceil(opts.pairs / 2) * 2);
  const out = { targetP99Ms: [] as number[], againstP99Ms: [] as number[], targetCalls: [] as number[], againstCalls: [] as number[], targetCpuUs: [] as number[], againstCpuUs: [] as number[] };
  for (let pair = 0; pair < pairs; pair++) {
    // A B, then B A: each target goes first as often as second.
    const order = pair % 2 === 0 ? [opts.target, opts.against] : [opts.against, opts.target];
    for (const t of order) {
      const { load, cpuUs } = await phase(t, opts);
      const bad = failure(t, load);
      if (bad !== undefined) throw new Error(`p99 pairs, pair ${pair + 1}: ${bad}`);
      const mine = t === opts.target;
      (mine ? out.targetP99Ms : out.againstP99Ms).push(load.p99Ms);
      (mine ? out.targetCalls : out.againstCalls).push(load.requests);
      (mine ? out.targetCpuUs : out.againstCpuUs).push(cpuUs);
    }
  }
  const pairRatios = out.targetP99Ms.map((p, i) => p / out.againstP99Ms[i]!);
  return {
    era: opts.era,
    concurrency: opts.concurrency,
    target: opts.target.name,
    against: opts.against.name,
    seconds: opts.seconds,
    ...out,
    pairRatios,
    ratio: median(pairRatios),
    ratioOfMedians: median(out.targetP99Ms) / median(out.againstP99Ms),
  };
}
