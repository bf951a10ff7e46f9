// `npm run bench:check [RESULTS.json [SESSIONS.json]]`: compares one `npm run bench` run with the limits kept in
// bench/limits.json, each a ratio to the bare hop measured in the same run, and exits 1 when one is exceeded
// or cannot be judged (a cell missing or failed). Run by hand and in the benchmark workflow, never in the
// unit tests: a timing is not a test.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { medianInterval } from './common.js';

interface Limit {
  name: string;
  upstream: string;
  era: string;
  concurrency: number;
  target: string;
  metric: 'cpu' | 'p99' | 'rss';
  max: number;
  /** The cell the ratio is taken to, when not the bare hop of the same upstream, era and concurrency. */
  relativeTo?: { era?: string; target?: string };
}

interface Cell {
  upstream: string;
  era: string;
  concurrency: number;
  target: string;
  status: string;
  cpuUsPerReq?: number;
  peakRssKb?: number;
  load?: { p99Ms?: number };
}

const HERE = fileURLToPath(new URL('.', import.meta.url));
const file = process.argv[2] ?? `${HERE}results/latest.json`;
const limitsFile = JSON.parse(readFileSync(`${HERE}limits.json`, 'utf8')) as {
  limits: Limit[];
  p99Pairs?: { name: string; eras: string[]; concurrency: number; target: string; max: number };
  logLine?: { name: string; eras: string[]; concurrency: number; max: number };
  sessions?: { name: string; maxPeakRssMb: number; sessions: number };
};
const { limits } = limitsFile;
const { cells, meta, logLine, p99Pairs } = JSON.parse(readFileSync(file, 'utf8')) as {
  cells: Cell[];
  meta?: { commit?: string };
  logLine?: Array<{ era: string; concurrency: number; ratio?: number; pairRatios?: number[]; error?: string }>;
  p99Pairs?: Array<{ era: string; concurrency: number; target: string; ratio?: number; ratioOfMedians?: number; pairRatios?: number[]; error?: string }>;
};

const UNITS = { cpu: 'µs CPU/call', p99: 'ms p99', rss: 'KB peak RSS' } as const;
const value = (c: Cell | undefined, metric: Limit['metric']): number | undefined =>
  c === undefined || c.status !== 'ok' ? undefined : metric === 'cpu' ? c.cpuUsPerReq : metric === 'rss' ? c.peakRssKb : c.load?.p99Ms;

let failed = 0;
process.stdout.write(`bench:check ${file}${meta?.commit ? ` (commit ${meta.commit.slice(0, 7)})` : ''}\n`);
for (const l of limits) {
  const find = (target: string, era: string): Cell | undefined => cells.find((c) => c.upstream === l.upstream && c.era === era && c.concurrency === l.concurrency && c.target === target);
  const ref = { era: l.relativeTo?.era ?? l.era, target: l.relativeTo?.target ?? 'bare-hop' };
  const ours = value(find(l.target, l.era), l.metric);
  const floor = value(find(ref.target, ref.era), l.metric);
  if (ours === undefined || floor === undefined || floor <= 0) {
    failed++;
    process.stdout.write(`  FAIL  ${l.name}: not measured in this run (${l.target} at ${l.era} or ${ref.target} at ${ref.era} missing for ${l.upstream} c=${l.concurrency})\n`);
    continue;
  }
  const ratio = ours / floor;
  const ok = ratio <= l.max;
  if (!ok) failed++;
  process.stdout.write(`  ${ok ? 'ok  ' : 'FAIL'}  ${l.name}: ${ratio.toFixed(2)}× (limit ${l.max}×; ${ours.toFixed(1)} vs ${floor.toFixed(1)} ${UNITS[l.metric]}${l.relativeTo !== undefined ? ` of ${ref.target} ${ref.era}` : ''})\n`);
}
/**
 * Where the median of a run's pairs lies, with 95% confidence, and whether that decides the limit: on this
 * VM one pair of 1 s phases spreads widely, and a median near its limit can fall either side of it by chance.
 */
function intervalNote(pairRatios: readonly number[] | undefined, max: number): string {
  const interval = medianInterval(pairRatios ?? []);
  if (interval === undefined) return '';
  const undecided = interval.low <= max && interval.high > max;
  return `; 95% interval of the median ${interval.low.toFixed(3)}–${interval.high.toFixed(3)}×${undecided ? ', which straddles the limit: this run does not decide it' : ''}`;
}

/** One ratio measured outside the cells (p99 pairs, the log line), per era, against its limit. */
function holdRatio(name: string, era: string, r: { ratio?: number; error?: string } | undefined, max: number, detail = ''): void {
  if (r?.ratio === undefined) {
    failed++;
    process.stdout.write(`  FAIL  ${name}, ${era}: not measured in this run${r?.error !== undefined ? ` (${r.error})` : ''}\n`);
    return;
  }
  const ok = r.ratio <= max;
  if (!ok) failed++;
  process.stdout.write(`  ${ok ? 'ok  ' : 'FAIL'}  ${name}, ${era}: ${r.ratio.toFixed(3)}× (limit ${max}×${detail})\n`);
}
// p99 at c=64 (bench/p99-pairs.ts): the pass-through and the bare hop in turns, the median of the pairs.
const pairsLimit = limitsFile.p99Pairs;
let pairChecks = 0;
if (pairsLimit !== undefined) {
  for (const era of pairsLimit.eras) {
    pairChecks++;
    const r = (p99Pairs ?? []).find((x) => x.era === era && x.concurrency === pairsLimit.concurrency && x.target === pairsLimit.target);
    // The cells' own p99 ratio, three rounds each, for reference.
    const cell = (target: string): Cell | undefined => cells.find((c) => c.upstream === 'minimal' && c.era === era && c.concurrency === pairsLimit.concurrency && c.target === target && c.status === 'ok');
    const ours = cell(pairsLimit.target)?.load?.p99Ms;
    const floor = cell('bare-hop')?.load?.p99Ms;
    const cellNote = ours !== undefined && floor !== undefined && floor > 0 ? `; the cells: ${(ours / floor).toFixed(2)}×` : '';
    holdRatio(pairsLimit.name, era, r, pairsLimit.max, `; ${r?.pairRatios?.length ?? '?'} pairs, ratio of medians ${r?.ratioOfMedians?.toFixed(3) ?? '?'}×${cellNote}${intervalNote(r?.pairRatios, pairsLimit.max)}`);
  }
}
// The request log line (bench/log-toggle.ts): what it adds within one process, switched on and off.
const logLimit = limitsFile.logLine;
let logChecks = 0;
if (logLimit !== undefined) {
  for (const era of logLimit.eras) {
    logChecks++;
    const r = (logLine ?? []).find((x) => x.era === era && x.concurrency === logLimit.concurrency);
    holdRatio(logLimit.name, era, r, logLimit.max, `; ${r?.pairRatios?.length ?? '?'} pairs${intervalNote(r?.pairRatios, logLimit.max)}`);
  }
}
// Memory with many sessions held (bench/sessions.ts): an absolute bound, from its own results file.
const sessionLimits = limitsFile.sessions;
let checked = limits.length + pairChecks + logChecks;
if (sessionLimits !== undefined) {
  checked++;
  let sessions: { results?: Array<{ mode: string; sessions: number; peakRssMb: number }> } = {};
  try {
    sessions = JSON.parse(readFileSync(process.argv[3] ?? `${HERE}results/latest-sessions.json`, 'utf8')) as typeof sessions;
  } catch {
    // not measured: said below
  }
  const rows = (sessions.results ?? []).filter((r) => r.sessions >= sessionLimits.sessions);
  const worst = rows.reduce((a, r) => Math.max(a, r.peakRssMb), 0);
  const ok = rows.length > 0 && worst <= sessionLimits.maxPeakRssMb;
  if (!ok) failed++;
  process.stdout.write(
    rows.length === 0
      ? `  FAIL  ${sessionLimits.name}: not measured (run bench/sessions.ts with at least ${sessionLimits.sessions} sessions)\n`
      : `  ${ok ? 'ok  ' : 'FAIL'}  ${sessionLimits.name}: ${worst.toFixed(1)} MB peak (limit ${sessionLimits.maxPeakRssMb} MB; ${rows.map((r) => `${r.mode} ${r.peakRssMb.toFixed(1)}`).join(', ')})\n`,
  );
}
process.stdout.write(failed === 0 ? 'every limit holds\n' : `${failed} of ${checked} limits exceeded or not measured\n`);
process.exitCode = failed === 0 ? 0 : 1;
