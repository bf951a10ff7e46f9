// What the request log line costs end to end, inside one process (issue 17 item 2: at most 5% of a call's
// CPU at c=16). Comparing two processes, one logging and one not, cannot show 5%: on this VM two processes
// of the same build differ by several percent for as long as they live. So one Gatehouse process is measured
// with its line on and off, switched by rewriting its config file and sending SIGHUP (`log.requests` follows
// a reload, and a log-only reload keeps the upstream pool and catalog).
//
// One closed-loop load runs throughout; the process's CPU and the calls answered are read at the edges of
// short segments. Between two segments of different states the line is switched, and a short settle is
// left out of both. Segments go on, off, off, on, on, off…, so each state follows a switch as often as not,
// and each segment is paired with its neighbour of the other state: the VM's slow stretches, which last
// seconds, land on both halves of a pair. The result is the median of the pairs' on ÷ off.

import { readFileSync, writeFileSync } from 'node:fs';
import { median, type Era } from './common.js';
import { runLoad, type LoadControl } from './load.js';
import { clockTicksPerSecond, readCpuTicks, readSchedNs, type Child } from './procs.js';

export interface LogToggleResult {
  era: Era;
  concurrency: number;
  /** Length of each measured segment, seconds. */
  seconds: number;
  /** CPU µs per call of each segment with the line on, and with it off, in the order measured. */
  onUs: number[];
  offUs: number[];
  /** Request lines written per call in each segment: 1 with the line on, 0 off (the switch took). */
  linesPerCallOn: number[];
  linesPerCallOff: number[];
  /** Each pair's on ÷ off. */
  pairRatios: number[];
  /** The median of the pairs' ratios: what the line adds, as a factor (1.03 = 3%). */
  ratio: number;
  /** The median of the on segments ÷ the median of the off segments, as a cross-check. */
  ratioOfMedians: number;
}

export interface LogToggleOptions {
  child: Child;
  /** The config file the process was started with (JSON, which is YAML). */
  configFile: string;
  era: Era;
  concurrency: number;
  /** Segments in all, half with the line on; rounded up to a multiple of 4. */
  rounds: number;
  /** Length of each measured segment, seconds. */
  seconds: number;
  authorization?: string;
}

/**
 * Left out after each switch: the reload's own work, the calls that were in flight across it, and V8
 * compiling again what the switch changed (a subscriber more or less on the end event deoptimises its
 * publisher and the functions around it; with the line on, about ten functions are compiled again in the
 * first few thousand calls, which a segment starting 150 ms after the switch counted against the line).
 */
const SETTLE_MS = 1_000;
/** A reload the bench asked for is seen in the log within this, or the switch is checked by the line count. */
const RELOAD_WAIT_MS = 3_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Rewrites `log.requests` in the file, sends SIGHUP and waits for the process to log the reload. */
export async function switchRequestLog(child: Child, file: string, on: boolean): Promise<void> {
  const before = child.reloads;
  const config = JSON.parse(readFileSync(file, 'utf8')) as { log?: Record<string, unknown> };
  config.log = { ...config.log, requests: on };
  writeFileSync(file, JSON.stringify(config));
  process.kill(child.pid, 'SIGHUP');
  // Bounded; a reload line split across two reads of the pipe is not seen, and the lines per call of the
  // next segment then show whether the switch took.
  for (let waited = 0; child.reloads === before && waited < RELOAD_WAIT_MS; waited += 10) {
    if (child.exited) throw new Error(`${child.name} exited`);
    await sleep(10);
  }
}

export async function measureLogToggle(opts: LogToggleOptions): Promise<LogToggleResult> {
  const { child, era, concurrency, seconds } = opts;
  const segments = Math.max(4, Math.ceil(opts.rounds / 4) * 4);
  const tick = clockTicksPerSecond();
  // On-CPU nanoseconds where the kernel keeps them: a segment of half a second is about 50 clock ticks.
  const cpuUs = (): number => {
    const ns = readSchedNs(child.pid);
    return ns !== undefined ? ns / 1e3 : (readCpuTicks(child.pid) / tick) * 1e6;
  };
  const result = { onUs: [] as number[], offUs: [] as number[], linesPerCallOn: [] as number[], linesPerCallOff: [] as number[] };
  const control: LoadControl = { calls: 0, stop: false };
  let measuring!: () => void;
  const started = new Promise<void>((resolve) => (measuring = resolve));
  // One load for all segments, bounded in time well beyond what the segments need.
  const budgetS = segments * (seconds + (SETTLE_MS + RELOAD_WAIT_MS) / 1000) + 30;
  const load = runLoad({
    url: child.url,
    era,
    concurrency,
    ...(opts.authorization !== undefined ? { authorization: opts.authorization } : {}),
    warmup: { seconds: 1, maxRequests: 50_000 },
    measure: { seconds: budgetS, maxRequests: 5_000_000 },
    maxErrors: 50,
    onMeasureStart: () => measuring(),
    control,
  });
  let logging = true;
  try {
    await Promise.race([started, load.then((r) => Promise.reject(new Error(`the load ended before the log toggle began: ${r.errorSamples.join('; ') || r.stoppedBy}`)))]);
    for (let segment = 0; segment < segments; segment++) {
      const on = segment % 4 === 0 || segment % 4 === 3;
      if (on !== logging) {
        await switchRequestLog(child, opts.configFile, on);
        logging = on;
      }
      await sleep(SETTLE_MS);
      const calls0 = control.calls;
      const lines0 = child.stderrLines;
      const t0 = cpuUs();
      await sleep(seconds * 1000);
      const t1 = cpuUs();
      const calls = control.calls - calls0;
      // Lines of the segment's last calls are still in the batch: at most one batch (5 ms) late, which the
      // next segment's settle or this 50 ms covers.
      await sleep(50);
      const lines = child.stderrLines - lines0;
      if (calls === 0) throw new Error(`log toggle segment ${segment + 1}: no calls answered`);
      (on ? result.onUs : result.offUs).push((t1 - t0) / calls);
      (on ? result.linesPerCallOn : result.linesPerCallOff).push(lines / calls);
    }
  } finally {
    control.stop = true;
    const r = await load.catch(() => undefined);
    if (!logging) await switchRequestLog(child, opts.configFile, true);
    if (r !== undefined && r.errors > 0) throw new Error(`log toggle: ${r.errors} calls failed: ${r.errorSamples.join('; ')}`);
  }
  // The switch must have taken: about a line per call on, none off (a reload's own lines are a handful
  // against thousands of calls).
  if (result.linesPerCallOff.some((l) => l > 0.01) || result.linesPerCallOn.some((l) => l < 0.9)) {
    throw new Error(`log toggle: the request log did not follow log.requests (lines per call on ${result.linesPerCallOn.map((l) => l.toFixed(2)).join(', ')}; off ${result.linesPerCallOff.map((l) => l.toFixed(2)).join(', ')})`);
  }
  const pairRatios = result.onUs.map((on, i) => on / result.offUs[i]!);
  return {
    era,
    concurrency,
    seconds,
    ...result,
    pairRatios,
    ratio: median(pairRatios),
    ratioOfMedians: median(result.onUs) / median(result.offUs),
  };
}
