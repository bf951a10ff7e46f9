// What the request log line costs end to end, inside one process (issue 17 item 2: at most 5% of a call's
// CPU at c=16). Comparing two processes, one logging and one not, cannot show 5%: on this VM two processes
// of the same build differ by several percent for as long as they live. So one Gatehouse process is measured
// with its line on and off in alternating rounds, switched by rewriting its config file (`log.requests`
// follows a reload). The rounds go on, off, off, on, on, off…: each state has as many rounds right after a
// reload as not, and each round is paired with its neighbour of the other state, so a slow stretch of the
// VM lands on both halves of a pair.

import { readFileSync, writeFileSync } from 'node:fs';
import { median, type Era } from './common.js';
import { runLoad } from './load.js';
import { clockTicksPerSecond, readCpuTicks, type Child } from './procs.js';

export interface LogToggleResult {
  era: Era;
  concurrency: number;
  seconds: number;
  /** CPU µs per call of each round with the line on, and with it off, in the order measured. */
  onUs: number[];
  offUs: number[];
  /** Request lines written per call in each round: 1 with the line on, 0 off (the switch took). */
  linesPerCallOn: number[];
  linesPerCallOff: number[];
  /** Each pair's on ÷ off. */
  pairRatios: number[];
  /** The median of the pairs' ratios: what the line adds, as a factor (1.03 = 3%). */
  ratio: number;
  /** The median of the on rounds ÷ the median of the off rounds, as a cross-check. */
  ratioOfMedians: number;
}

export interface LogToggleOptions {
  child: Child;
  /** The config file the process was started with (JSON, which is YAML). */
  configFile: string;
  era: Era;
  concurrency: number;
  /** Rounds in all, half with the line on; rounded up to a multiple of 4. */
  rounds: number;
  seconds: number;
  authorization?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Rewrites `log.requests` in the file and waits for the process to say it reloaded (its info line). */
async function switchRequestLog(child: Child, file: string, on: boolean): Promise<void> {
  // Lines of the last round still in the batch go out within a few milliseconds.
  await sleep(100);
  const before = child.stderrLines;
  const config = JSON.parse(readFileSync(file, 'utf8')) as { log?: Record<string, unknown> };
  config.log = { ...config.log, requests: on };
  writeFileSync(file, JSON.stringify(config));
  // The file is polled every second; bounded at 15 s.
  for (let waited = 0; child.stderrLines === before; waited += 50) {
    if (waited > 15_000) throw new Error(`${child.name} did not reload ${file} within 15 s`);
    if (child.exited) throw new Error(`${child.name} exited`);
    await sleep(50);
  }
  await sleep(100);
}

export async function measureLogToggle(opts: LogToggleOptions): Promise<LogToggleResult> {
  const { child, era, concurrency, seconds } = opts;
  const rounds = Math.max(4, Math.ceil(opts.rounds / 4) * 4);
  const tick = clockTicksPerSecond();
  const result = { onUs: [] as number[], offUs: [] as number[], linesPerCallOn: [] as number[], linesPerCallOff: [] as number[] };
  let logging = true;
  try {
    for (let round = 0; round < rounds; round++) {
      const on = round % 4 === 0 || round % 4 === 3;
      if (on !== logging) {
        await switchRequestLog(child, opts.configFile, on);
        logging = on;
      }
      let t0 = 0;
      let t1 = 0;
      let lines0 = 0;
      let lines1 = 0;
      const load = await runLoad({
        url: child.url,
        era,
        concurrency,
        ...(opts.authorization !== undefined ? { authorization: opts.authorization } : {}),
        warmup: { seconds: 0.5, maxRequests: 20_000 },
        measure: { seconds, maxRequests: 200_000 },
        maxErrors: 50,
        onMeasureStart: () => {
          lines0 = child.stderrLines;
          t0 = readCpuTicks(child.pid);
        },
        onMeasureEnd: () => {
          t1 = readCpuTicks(child.pid);
          lines1 = child.stderrLines;
        },
      });
      if (load.errors > 0 || load.requests === 0) throw new Error(`log toggle round ${round + 1}: ${load.errors} errors, ${load.requests} calls`);
      // The last lines of the round are still in the batch when it ends: at most one batch's worth.
      await sleep(100);
      lines1 = Math.max(lines1, child.stderrLines);
      const cpu = (((t1 - t0) / tick) * 1e6) / load.requests;
      const lines = (lines1 - lines0) / load.requests;
      (on ? result.onUs : result.offUs).push(cpu);
      (on ? result.linesPerCallOn : result.linesPerCallOff).push(lines);
    }
  } finally {
    if (!logging) await switchRequestLog(child, opts.configFile, true);
  }
  // The switch must have taken: about a line per call on, none off (a reload's own line is not in a round).
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
