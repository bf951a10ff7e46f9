// `npm run bench`: tools/call through Gatehouse, through a bare node:http + undici hop, and directly to
// the upstream, for both protocol eras, at several concurrencies, against a minimal hand-written upstream
// and a real SDK server. Prints a table and writes JSON under bench/results/. See bench/README.md.
//
// Environment (all optional):
//   BENCH_SECONDS=2            measured phase per cell and round, seconds (also bounded by BENCH_MAX_REQUESTS)
//   BENCH_ROUNDS=3             rounds per cell, the targets taking turns; a cell reports the rounds' medians
//   BENCH_LOG_ROUNDS=60        segments of the request log line measured in one process under one load (on,
//                              off, off, on…, switched by SIGHUP; minimal upstream, c=16, per era); 0 skips it
//   BENCH_LOG_SECONDS=1        length of each of those segments, seconds
//   BENCH_P99_PAIRS=60         pairs of phases, the pass-through and the bare hop in turns at c=64 (minimal
//                              upstream, per era), whose median p99 ratio bench:check holds; 0 skips it
//   BENCH_P99_SECONDS=1        measured phase of each, seconds (after a 0.25 s warm-up of its connections)
//   BENCH_MAX_REQUESTS=200000  measured phase per cell, requests
//   BENCH_WARMUP_SECONDS=1     warm-up per cell, seconds (also bounded by BENCH_WARMUP_REQUESTS)
//   BENCH_WARMUP_REQUESTS=20000
//   BENCH_PROCESS_WARMUP_SECONDS=10   once per started process, at concurrency 16, before its first cell
//   BENCH_CONCURRENCY=1,16,64
//   BENCH_UPSTREAMS=minimal,sdk,sse
//   BENCH_ERAS=legacy,modern
//   BENCH_TARGETS=direct,bare-hop,gatehouse,gatehouse-redis,gatehouse-trace-100,gatehouse-trace-1
//   BENCH_MAX_ERRORS=50        a phase stops early after this many failed requests
//   BENCH_GATEHOUSE_LOG_LEVEL=info  Gatehouse's --log-level; warn drops the per-request log line
//   BENCH_BASELINE=DIR          another checkout with its own dist/main.js (an earlier commit, built):
//                               measured as target "baseline" beside "gatehouse", in the same run

import { execSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LEGACY_VERSION, median, MODERN_VERSION, type Era } from './common.js';
import { runLoad, warmUpProcess, type LoadResult } from './load.js';
import {
  announcedUrl,
  clockTicksPerSecond,
  cpuModel,
  gatehouseUrl,
  installSignalCleanup,
  readCpuTicks,
  readPeakRssKb,
  readSchedNs,
  resetPeakRss,
  startChild,
  stopAllChildren,
  stopChild,
  type Child,
} from './procs.js';
import { measureLogToggle, type LogToggleResult } from './log-toggle.js';
import { measureP99Pairs, type P99PairsResult } from './p99-pairs.js';
import { startBenchRedis, type BenchRedis } from './redis.js';
import { authorizationFor, gatehouseArgs, SETUPS, type Setup } from './setups.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
/** The concurrency issue 17 fixes its CPU targets at, the log line's included. */
const LOG_TOGGLE_CONCURRENCY = 16;
/** The concurrency issue 17 fixes its latency target at. */
const P99_PAIRS_CONCURRENCY = 64;
const P99_PAIRS_WARMUP_SECONDS = 0.25;
const ROOT = path.dirname(BENCH_DIR);
const RESULTS_DIR = path.join(BENCH_DIR, 'results');
/** State files of the Gatehouse targets: a temp dir, removed when the bench ends. */
const STATE_DIR = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-state-'));
process.once('exit', () => rmSync(STATE_DIR, { recursive: true, force: true }));

type UpstreamKind = 'minimal' | 'sdk' | 'sse';
/**
 * `gatehouse`: the pass-through (no auth, no policy, audit off) with its request log; `gatehouse-nolog`: the
 * same at --log-level warn; `gatehouse-audited`: the default config, every call audited to SQLite;
 * `gatehouse-governed`: API key auth, an access rule, a rate limit, a budget and the SQLite audit;
 * `gatehouse-redis`: audited with the Redis store; `gatehouse-policy`: governed plus egress, a per-address
 * limit and a breaker (bench/setups.ts); `gatehouse-trace-100` and `gatehouse-trace-1`: `gatehouse` with
 * tracing on, sampling 100% and 1% of calls, exporting to an OTLP/HTTP sink the bench starts (bench/otlp-sink.ts).
 */
type TargetKind = 'direct' | 'bare-hop' | 'baseline' | 'gatehouse' | 'gatehouse-nolog' | 'gatehouse-audited' | 'gatehouse-governed' | 'gatehouse-redis' | 'gatehouse-policy' | 'gatehouse-trace-100' | 'gatehouse-trace-1';
const ALL_TARGETS: readonly TargetKind[] = ['direct', 'bare-hop', 'baseline', 'gatehouse', 'gatehouse-nolog', 'gatehouse-audited', 'gatehouse-governed', 'gatehouse-redis', 'gatehouse-policy', 'gatehouse-trace-100', 'gatehouse-trace-1'];
const DEFAULT_TARGETS: readonly TargetKind[] = ['direct', 'bare-hop', 'gatehouse', 'gatehouse-nolog', 'gatehouse-audited', 'gatehouse-governed'];
/** The Gatehouse setup each Gatehouse target runs, and its log level (undefined: BENCH_GATEHOUSE_LOG_LEVEL). */
const SETUP_OF: Partial<Record<TargetKind, { setup: Setup; logLevel?: string; redis?: true; sampleRatio?: number }>> = {
  gatehouse: { setup: 'passthrough' },
  'gatehouse-nolog': { setup: 'passthrough', logLevel: 'warn' },
  'gatehouse-audited': { setup: 'audited' },
  'gatehouse-governed': { setup: 'governed' },
  'gatehouse-redis': { setup: 'audited', redis: true },
  'gatehouse-policy': { setup: 'policy' },
  'gatehouse-trace-100': { setup: 'passthrough', sampleRatio: 1 },
  'gatehouse-trace-1': { setup: 'passthrough', sampleRatio: 0.01 },
};

function envNumber(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min || n > max) throw new Error(`${name} must be a number in [${min}, ${max}], got "${raw}"`);
  return n;
}

function envList<T extends string>(name: string, allowed: readonly T[], defaults: readonly T[] = allowed): T[] {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return [...defaults];
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const i of items) if (!(allowed as readonly string[]).includes(i)) throw new Error(`${name}: unknown value "${i}" (allowed: ${allowed.join(', ')})`);
  return items as T[];
}

const settings = {
  seconds: envNumber('BENCH_SECONDS', 2, 0.1, 600),
  rounds: Math.floor(envNumber('BENCH_ROUNDS', 3, 1, 20)),
  logToggleRounds: Math.floor(envNumber('BENCH_LOG_ROUNDS', 60, 0, 400)),
  logToggleSeconds: envNumber('BENCH_LOG_SECONDS', 1, 0.1, 60),
  p99Pairs: Math.floor(envNumber('BENCH_P99_PAIRS', 60, 0, 400)),
  p99Seconds: envNumber('BENCH_P99_SECONDS', 1, 0.1, 60),
  maxRequests: Math.floor(envNumber('BENCH_MAX_REQUESTS', 200_000, 1, 10_000_000)),
  warmupSeconds: envNumber('BENCH_WARMUP_SECONDS', 1, 0, 600),
  warmupRequests: Math.floor(envNumber('BENCH_WARMUP_REQUESTS', 20_000, 0, 10_000_000)),
  processWarmupSeconds: envNumber('BENCH_PROCESS_WARMUP_SECONDS', 10, 0, 600),
  maxErrors: Math.floor(envNumber('BENCH_MAX_ERRORS', 50, 1, 1_000_000)),
  concurrency: (process.env.BENCH_CONCURRENCY ?? '1,16,64').split(',').map((s) => {
    const n = Number(s.trim());
    if (!Number.isInteger(n) || n < 1 || n > 1024) throw new Error(`BENCH_CONCURRENCY: bad value "${s}"`);
    return n;
  }),
  upstreams: envList<UpstreamKind>('BENCH_UPSTREAMS', ['minimal', 'sdk', 'sse']),
  eras: envList<Era>('BENCH_ERAS', ['legacy', 'modern']),
  targets: envList<TargetKind>('BENCH_TARGETS', ALL_TARGETS, process.env.BENCH_BASELINE ? ['direct', 'bare-hop', 'baseline', ...DEFAULT_TARGETS.slice(2)] : DEFAULT_TARGETS),
  baseline: process.env.BENCH_BASELINE,
};

interface Cell {
  upstream: UpstreamKind;
  era: Era;
  protocolVersion: string;
  concurrency: number;
  target: TargetKind;
  /** ok: measured without errors; errors: some request failed; unavailable: the target did not start. */
  /** skipped: the target cannot reach this upstream by design (the HTTP+SSE upstream speaks only to Gatehouse). */
  status: 'ok' | 'errors' | 'unavailable' | 'skipped';
  /** Whose CPU and RSS the cell reports: the process under test, or the upstream for `direct`. */
  measuredProcess: Exclude<TargetKind, 'direct'> | 'upstream';
  /** gatehouse-redis: the Redis server's CPU per request in the same phase (Gatehouse's own is cpuUsPerReq). */
  redisCpuUsPerReq?: number;
  pid?: number;
  load?: LoadResult;
  cpuTicks?: number;
  /** CPU of the measured process per request, from /proc/<pid>/stat utime+stime (tick resolution). */
  cpuUsPerReq?: number;
  /** Same, from per-thread schedstat (nanosecond resolution), as a cross-check. */
  cpuUsPerReqSchedstat?: number;
  /** Measured process CPU time over the measured phase's wall time (100 = one full core). */
  cpuPercent?: number;
  /** VmHWM after the measured phase (reset to the current RSS at its start when the kernel allows it). */
  peakRssKb?: number;
  peakRssIsPerCell?: boolean;
  /** The upstream's CPU per request during the same phase (for direct, the same as cpuUsPerReq). */
  upstreamCpuUsPerReq?: number;
  /** The load generator's (this process's) CPU per request. */
  loadgenCpuUsPerReq?: number;
  /** Lines the measured process wrote to stderr per request during the phase (Gatehouse logs there). */
  stderrLinesPerReq?: number;
  /** Each round's own figures, when the cell was measured in several (BENCH_ROUNDS). */
  rounds?: Array<{ cpuUsPerReq: number; p99Ms: number; rps: number; peakRssKb?: number }>;
  note?: string;
}

/** One Gatehouse target's cell next to the bare hop's, in the same run. */
interface Ratio {
  upstream: UpstreamKind;
  era: Era;
  concurrency: number;
  target: TargetKind;
  cpuUsPerReq?: number;
  bareHopCpuUsPerReq?: number;
  /** CPU per call ÷ the bare hop's. */
  cpuRatio?: number;
  p99Ms?: number;
  p99Ratio?: number;
  peakRssMb?: number;
  rssRatio?: number;
  note?: string;
}

function tsxChild(name: string, script: string, extra: string[] = []): Promise<Child> {
  return startChild(name, {
    args: ['--import', 'tsx', path.join(BENCH_DIR, script), ...extra],
    cwd: ROOT,
    ready: (line) => announcedUrl(line),
  });
}

function startUpstream(kind: UpstreamKind, era: Era): Promise<Child> {
  if (kind === 'minimal') return tsxChild(`minimal-upstream`, 'minimal-upstream.ts');
  // The HTTP+SSE server is legacy whatever the client: a modern client is bridged to it.
  if (kind === 'sse') return tsxChild('sdk-upstream-sse (v1 SDK, HTTP+SSE)', 'sdk-upstream-sse.ts');
  return era === 'legacy' ? tsxChild('sdk-upstream-legacy (v1 SDK)', 'sdk-upstream-legacy.ts') : tsxChild('sdk-upstream-modern (v2 SDK)', 'sdk-upstream-modern.ts');
}

function authorizationOf(target: TargetKind): string | undefined {
  const spec = SETUP_OF[target];
  return spec === undefined ? undefined : authorizationFor(spec.setup);
}

/** Starts one of this build's Gatehouse targets (bench/setups.ts). */
function startGatehouse(target: TargetKind, upstreamUrl: string, redisUrl?: string, tracesUrl?: string): Promise<Child> {
  const spec = SETUP_OF[target];
  if (spec === undefined) return Promise.reject(new Error(`${target} is not a Gatehouse target`));
  const main = path.join(ROOT, 'dist', 'main.js');
  if (!existsSync(main)) return Promise.reject(new Error(`${main} does not exist (run npm run build)`));
  const logLevel = spec.logLevel ?? process.env.BENCH_GATEHOUSE_LOG_LEVEL ?? 'info';
  if (spec.sampleRatio !== undefined && tracesUrl === undefined) return Promise.reject(new Error(`${target} needs the OTLP sink, which did not start`));
  const tracing = spec.sampleRatio !== undefined ? { endpoint: tracesUrl!, sampleRatio: spec.sampleRatio } : undefined;
  const args = gatehouseArgs(ROOT, spec.setup, upstreamUrl, STATE_DIR, logLevel, spec.redis && redisUrl !== undefined ? { redisUrl } : undefined, tracing);
  return startGatehouseProcess(target, args, ROOT).then((child) => {
    configFileOf.set(child, args[args.indexOf('--config') + 1]!);
    return child;
  });
}

/** The config file each Gatehouse target was started with (the log toggle rewrites it). */
const configFileOf = new Map<Child, string>();
/** The request log line measured inside one process, per era (bench/log-toggle.ts). */
const logLines: Array<LogToggleResult | { era: Era; concurrency: number; error: string }> = [];
/** p99 at c=64 of the pass-through against the bare hop, in adjacent pairs, per era (bench/p99-pairs.ts). */
const p99Pairs: Array<P99PairsResult | { era: Era; concurrency: number; target: string; error: string }> = [];

function startGatehouseProcess(name: string, args: string[], cwd: string): Promise<Child> {
  return startChild(name, {
    args,
    cwd,
    readyTimeoutMs: 20_000,
    ready: gatehouseUrl,
  });
}

/**
 * An earlier build, started with `--upstream` and no store: it may predate the store and the config's audit
 * switch. With BENCH_BASELINE_SETUP, one of this build's setups instead (an earlier build that reads it).
 */
function startBaseline(upstreamUrl: string): Promise<Child> {
  if (settings.baseline === undefined) return Promise.reject(new Error('target "baseline" needs BENCH_BASELINE=DIR (a checkout with dist/main.js)'));
  const root = path.resolve(settings.baseline);
  const main = path.join(root, 'dist', 'main.js');
  if (!existsSync(main)) return Promise.reject(new Error(`${main} does not exist (build that checkout)`));
  // Same setup as this build's targets: for an earlier build that already reads that config.
  const setup = process.env.BENCH_BASELINE_SETUP as Setup | undefined;
  if (setup !== undefined) {
    if (!SETUPS.includes(setup)) return Promise.reject(new Error(`BENCH_BASELINE_SETUP must be one of ${SETUPS.join(', ')}`));
    return startGatehouseProcess('gatehouse-baseline', gatehouseArgs(root, setup, upstreamUrl, path.join(STATE_DIR, 'baseline'), process.env.BENCH_GATEHOUSE_LOG_LEVEL ?? 'info'), root);
  }
  return startGatehouseProcess('gatehouse-baseline', [main, 'serve', '--upstream', upstreamUrl, '--host', '127.0.0.1', '--port', '0', '--log-level', process.env.BENCH_GATEHOUSE_LOG_LEVEL ?? 'info'], root);
}

async function measureCell(base: Omit<Cell, 'status' | 'measuredProcess'>, url: string, measured: Child, measuredProcess: Cell['measuredProcess'], upstream: Child, redisPid?: number, authorization?: string): Promise<Cell> {
  let r0 = 0;
  let r1 = 0;
  const tick = clockTicksPerSecond();
  let t0 = 0;
  let s0: number | undefined;
  let u0 = 0;
  let lg0 = process.cpuUsage();
  let lines0 = 0;
  let t1 = 0;
  let s1: number | undefined;
  let u1 = 0;
  let lg1 = lg0;
  let lines1 = 0;
  let rssReset = false;
  let peakRssKb: number | undefined;
  const load = await runLoad({
    url,
    era: base.era,
    concurrency: base.concurrency,
    warmup: { seconds: settings.warmupSeconds, maxRequests: settings.warmupRequests },
    measure: { seconds: settings.seconds, maxRequests: settings.maxRequests },
    maxErrors: settings.maxErrors,
    ...(authorization !== undefined ? { authorization } : {}),
    onMeasureStart: () => {
      rssReset = resetPeakRss(measured.pid);
      lines0 = measured.stderrLines;
      lg0 = process.cpuUsage();
      u0 = readCpuTicks(upstream.pid);
      if (redisPid !== undefined) r0 = readCpuTicks(redisPid);
      s0 = readSchedNs(measured.pid);
      t0 = readCpuTicks(measured.pid);
    },
    onMeasureEnd: () => {
      t1 = readCpuTicks(measured.pid);
      s1 = readSchedNs(measured.pid);
      u1 = readCpuTicks(upstream.pid);
      if (redisPid !== undefined) r1 = readCpuTicks(redisPid);
      lg1 = process.cpuUsage();
      lines1 = measured.stderrLines;
      peakRssKb = readPeakRssKb(measured.pid);
    },
  });
  const attempts = load.requests + load.errors;
  const hasErrors = load.errors > 0 || load.warmupErrors > 0 || load.setupError !== undefined;
  const cell: Cell = { ...base, status: hasErrors ? 'errors' : 'ok', measuredProcess, pid: measured.pid, load };
  if (attempts > 0 && load.setupError === undefined) {
    const usPerTick = 1e6 / tick;
    cell.cpuTicks = t1 - t0;
    cell.cpuUsPerReq = ((t1 - t0) * usPerTick) / attempts;
    if (s0 !== undefined && s1 !== undefined) cell.cpuUsPerReqSchedstat = (s1 - s0) / 1000 / attempts;
    cell.cpuPercent = load.elapsedS > 0 ? (((t1 - t0) / tick) / load.elapsedS) * 100 : undefined;
    cell.upstreamCpuUsPerReq = ((u1 - u0) * usPerTick) / attempts;
    if (redisPid !== undefined) cell.redisCpuUsPerReq = ((r1 - r0) * usPerTick) / attempts;
    cell.loadgenCpuUsPerReq = (lg1.user - lg0.user + lg1.system - lg0.system) / attempts;
    cell.stderrLinesPerReq = (lines1 - lines0) / attempts;
    if (peakRssKb !== undefined) cell.peakRssKb = peakRssKb;
    cell.peakRssIsPerCell = rssReset;
    if (t1 - t0 < 50) cell.note = `only ${t1 - t0} CPU ticks measured: CPU per request is coarse (raise BENCH_SECONDS)`;
  }
  if (measured.exited) cell.note = `${measured.name} exited during the cell (${measured.exitInfo ?? '?'})`;
  return cell;
}

/**
 * One cell from its rounds: CPU per call, p50, p99 and req/s are the medians of the rounds, peak RSS the
 * highest; the rest (counts, notes) comes from the round whose CPU is the median. A round with errors makes
 * the cell's status `errors`. Each round's own figures stay in `rounds`.
 */
function combineRounds(measured: Cell[]): Cell {
  const ok = measured.filter((c) => c.status === 'ok' && c.cpuUsPerReq !== undefined && c.load !== undefined);
  if (ok.length === 0 || ok.length < measured.length) return measured.find((c) => c.status !== 'ok') ?? measured[0]!;
  if (ok.length === 1) return ok[0]!;
  const byCpu = [...ok].sort((a, b) => a.cpuUsPerReq! - b.cpuUsPerReq!);
  const base = byCpu[(byCpu.length - 1) >> 1]!;
  const of = (pick: (c: Cell) => number | undefined): number[] => ok.map(pick).filter((v): v is number => v !== undefined);
  const cell: Cell = {
    ...base,
    cpuUsPerReq: median(of((c) => c.cpuUsPerReq)),
    load: { ...base.load!, p50Ms: median(of((c) => c.load!.p50Ms)), p99Ms: median(of((c) => c.load!.p99Ms)), rps: median(of((c) => c.load!.rps)) },
    rounds: ok.map((c) => ({ cpuUsPerReq: c.cpuUsPerReq!, p99Ms: c.load!.p99Ms, rps: c.load!.rps, ...(c.peakRssKb !== undefined ? { peakRssKb: c.peakRssKb } : {}) })),
  };
  const sched = of((c) => c.cpuUsPerReqSchedstat);
  if (sched.length === ok.length) cell.cpuUsPerReqSchedstat = median(sched);
  const rss = of((c) => c.peakRssKb);
  if (rss.length > 0) cell.peakRssKb = Math.max(...rss);
  return cell;
}

// ---- output ------------------------------------------------------------------------------------------

function fmt(n: number | undefined, digits: number): string {
  return n === undefined || !Number.isFinite(n) ? '-' : n.toFixed(digits);
}

function fmtInt(n: number | undefined): string {
  return n === undefined || !Number.isFinite(n) ? '-' : Math.round(n).toLocaleString('en-US');
}

const COLUMNS: Array<[string, number]> = [
  ['conc', 4],
  ['target', 19],
  ['req/s', 8],
  ['p50 ms', 7],
  ['p99 ms', 7],
  ['CPU µs/req', 10],
  ['CPU of', 19],
  ['CPU %', 6],
  ['upstr µs', 8],
  ['peak RSS MB', 11],
  ['errors', 6],
];

function row(values: string[]): string {
  return values.map((v, i) => (i === 1 || i === 6 ? v.padEnd(COLUMNS[i]![1]) : v.padStart(COLUMNS[i]![1]))).join('  ');
}

function groupTitle(upstream: UpstreamKind, era: Era): string {
  const up = upstream === 'sse' ? 'SDK upstream over HTTP+SSE (v1 SDK SSEServerTransport, 2024-11-05)' : upstream === 'minimal' ? 'minimal upstream' : era === 'legacy' ? 'SDK upstream (v1 SDK, stateful, JSON responses)' : 'SDK upstream (v2 SDK createMcpHandler)';
  return `${up} — ${era} era (${era === 'legacy' ? LEGACY_VERSION : MODERN_VERSION})`;
}

function tableHeader(upstream: UpstreamKind, era: Era): string {
  const header = row(COLUMNS.map(([name]) => name));
  return `\n${groupTitle(upstream, era)}\n${header}\n${'-'.repeat(header.length)}`;
}

function cellRow(c: Cell): string {
  if (c.status === 'skipped') return row([String(c.concurrency), c.target, '-', '-', '-', '-', '-', '-', '-', '-', '-']) + `  (skipped: ${c.note ?? ''})`;
  if (c.status === 'unavailable') return row([String(c.concurrency), c.target, '-', '-', '-', '-', '-', '-', '-', '-', 'n/a']) + `  (${c.note ?? 'unavailable'})`;
  const l = c.load;
  const errors = l === undefined ? '-' : String(l.errors + l.warmupErrors);
  const line = row([
    String(c.concurrency),
    c.target,
    fmtInt(l?.rps),
    fmt(l?.p50Ms, 3),
    fmt(l?.p99Ms, 3),
    fmt(c.cpuUsPerReq, 1),
    c.measuredProcess,
    fmt(c.cpuPercent, 0),
    fmt(c.upstreamCpuUsPerReq, 1),
    fmt(c.peakRssKb === undefined ? undefined : c.peakRssKb / 1024, 1),
    errors,
  ]);
  const notes: string[] = [];
  if (c.redisCpuUsPerReq !== undefined) notes.push(`redis-server ${fmt(c.redisCpuUsPerReq, 1)} µs/req`);
  if (c.status === 'errors' && l !== undefined) notes.push(`ERRORS: ${l.errorSamples.slice(0, 2).join(' | ')}`);
  if (c.note !== undefined) notes.push(c.note);
  return notes.length > 0 ? `${line}  <- ${notes.join('; ')}` : line;
}

/** Each Gatehouse target's cell of one (upstream, era, concurrency) next to the bare hop's. */
function ratiosFor(cells: Cell[], upstream: UpstreamKind, era: Era, concurrency: number): Ratio[] {
  const here = cells.filter((c) => c.upstream === upstream && c.era === era && c.concurrency === concurrency);
  const bare = here.find((c) => c.target === 'bare-hop' && c.status === 'ok');
  // A group without a bare hop by design (HTTP+SSE) has no ratios to print.
  if (here.some((c) => c.target === 'bare-hop' && c.status === 'skipped')) return [];
  const over = (a: number | undefined, b: number | undefined): number | undefined => (a !== undefined && b !== undefined && b > 0 ? a / b : undefined);
  return here
    .filter((c) => c.target !== 'direct' && c.target !== 'bare-hop')
    .map((c) => {
      const r: Ratio = { upstream, era, concurrency, target: c.target };
      const ok = c.status === 'ok';
      if (ok && c.cpuUsPerReq !== undefined) r.cpuUsPerReq = c.cpuUsPerReq;
      if (ok && c.load !== undefined) r.p99Ms = c.load.p99Ms;
      if (ok && c.peakRssKb !== undefined) r.peakRssMb = c.peakRssKb / 1024;
      if (bare?.cpuUsPerReq !== undefined) r.bareHopCpuUsPerReq = bare.cpuUsPerReq;
      const cpu = over(r.cpuUsPerReq, bare?.cpuUsPerReq);
      const p99 = over(r.p99Ms, bare?.load?.p99Ms);
      const rss = over(r.peakRssMb, bare?.peakRssKb === undefined ? undefined : bare.peakRssKb / 1024);
      if (cpu !== undefined) r.cpuRatio = cpu;
      if (p99 !== undefined) r.p99Ratio = p99;
      if (rss !== undefined) r.rssRatio = rss;
      if (!ok) r.note = `${c.target}: ${c.status}`;
      else if (bare === undefined) r.note = 'no bare-hop cell';
      return r;
    });
}

function logToggleLine(r: LogToggleResult): string {
  const us = (xs: number[]): string => xs.map((x) => x.toFixed(1)).join(' ');
  return `request log line, ${r.era} c=${r.concurrency}, one process switched on and off: ${r.ratio >= 1 ? '+' : '−'}${(Math.abs(r.ratio - 1) * 100).toFixed(1)}% CPU per call (median of ${r.pairRatios.length} pairs of ${r.seconds} s segments; ratio of medians ${r.ratioOfMedians.toFixed(3)}×); on ${us(r.onUs)} µs, off ${us(r.offUs)} µs`;
}

function p99PairsLine(r: P99PairsResult): string {
  const ms = (xs: number[]): string => xs.map((x) => x.toFixed(1)).join(' ');
  return `p99 at c=${r.concurrency}, ${r.era}, ${r.target} against ${r.against} in ${r.pairRatios.length} adjacent pairs of ${r.seconds} s phases: ${r.ratio.toFixed(3)}× (median of the pairs; ratio of medians ${r.ratioOfMedians.toFixed(3)}×); ${r.target} ${ms(r.targetP99Ms)} ms, ${r.against} ${ms(r.againstP99Ms)} ms`;
}

function ratioLine(r: Ratio): string {
  const head = `${r.upstream}/${r.era} c=${r.concurrency}`.padEnd(20) + r.target.padEnd(20);
  if (r.cpuRatio === undefined) return `${head} ratio to the bare hop unavailable${r.note !== undefined ? ` (${r.note})` : ''}`;
  const x = (n: number | undefined): string => (n === undefined ? '-' : `${n.toFixed(2)}×`);
  return `${head} CPU ${fmt(r.cpuUsPerReq, 1)} µs/call = ${x(r.cpuRatio)}   p99 ${fmt(r.p99Ms, 3)} ms = ${x(r.p99Ratio)}   peak RSS ${fmt(r.peakRssMb, 1)} MB = ${x(r.rssRatio)}`;
}

function gitCommit(): string | undefined {
  try {
    return execSync('git rev-parse HEAD', { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

// ---- main --------------------------------------------------------------------------------------------

async function runGroup(upstreamKind: UpstreamKind, era: Era, cells: Cell[]): Promise<void> {
  const started: Child[] = [];
  const protocolVersion = era === 'legacy' ? LEGACY_VERSION : MODERN_VERSION;
  process.stdout.write(tableHeader(upstreamKind, era) + '\n');
  try {
    let upstream: Child;
    try {
      upstream = await startUpstream(upstreamKind, era);
      started.push(upstream);
    } catch (err) {
      for (const concurrency of settings.concurrency) {
        for (const target of settings.targets) {
          const cell: Cell = { upstream: upstreamKind, era, protocolVersion, concurrency, target, status: 'unavailable', measuredProcess: 'upstream', note: `upstream did not start: ${(err as Error).message.split('\n')[0]}` };
          cells.push(cell);
          process.stdout.write(cellRow(cell) + '\n');
        }
      }
      return;
    }
    const targets = new Map<TargetKind, { child: Child; url: string } | Error>();
    let redis: BenchRedis | undefined;
    let sink: Child | undefined;
    for (const target of settings.targets) {
      // The load generator and the bare hop speak Streamable HTTP; an HTTP+SSE server is reached only through Gatehouse.
      if (upstreamKind === 'sse' && (target === 'direct' || target === 'bare-hop' || target === 'baseline')) {
        targets.set(target, new NotApplicable('the upstream speaks HTTP+SSE, which only Gatehouse (transport: auto) talks to; compare with the sdk group'));
        continue;
      }
      if (target === 'direct') {
        targets.set(target, { child: upstream, url: upstream.url });
        continue;
      }
      try {
        if (SETUP_OF[target]?.redis) {
          redis = await startBenchRedis();
          redisStops.push(redis);
        }
        if (SETUP_OF[target]?.sampleRatio !== undefined && sink === undefined) {
          // The trace backend of the tracing targets: started once per group, stopped with the group.
          sink = await tsxChild('otlp-sink', 'otlp-sink.ts');
          started.push(sink);
        }
        const child =
          target === 'bare-hop'
            ? await tsxChild('bare-hop', 'bare-hop.ts', ['--upstream', upstream.url])
            : target === 'baseline'
              ? await startBaseline(upstream.url)
              : await startGatehouse(target, upstream.url, redis?.url, sink?.url);
        started.push(child);
        targets.set(target, { child, url: child.url });
      } catch (err) {
        targets.set(target, err as Error);
      }
    }
    // One warm-up per process (JIT, pools) so that concurrency 1, measured first, is not also the coldest. Ten
    // seconds: a young Gatehouse keeps getting cheaper for its first 10,000 calls or so, the governed call
    // from about 650 to about 240 µs (bench/age.ts, results/*-age-*.json); a server that has been up for an
    // hour is what the figures are about.
    const warmupNotes = new Map<TargetKind, string>();
    if (settings.processWarmupSeconds > 0) {
      for (const [target, t] of targets) {
        if (t instanceof Error) continue;
        const w = await warmUpProcess(t.url, era, 16, { seconds: settings.processWarmupSeconds, maxRequests: 1_000_000 }, authorizationOf(target));
        if (w.errors > 0) warmupNotes.set(target, `process warm-up had ${w.errors} error(s): ${w.samples.slice(0, 2).join(' | ')}`);
      }
    }
    const measureOnce = async (target: TargetKind, concurrency: number): Promise<Cell> => {
      const t = targets.get(target);
      const base = { upstream: upstreamKind, era, protocolVersion, concurrency, target };
      if (t instanceof NotApplicable) return { ...base, status: 'skipped', measuredProcess: target === 'direct' ? 'upstream' : target, note: t.message };
      if (t === undefined || t instanceof Error) return { ...base, status: 'unavailable', measuredProcess: target === 'direct' ? 'upstream' : target, note: `did not start: ${t?.message.split('\n')[0] ?? 'unknown'}` };
      if (t.child.exited) return { ...base, status: 'unavailable', measuredProcess: target === 'direct' ? 'upstream' : target, note: `${t.child.name} exited (${t.child.exitInfo ?? '?'})` };
      const cell = await measureCell(base, t.url, t.child, target === 'direct' ? 'upstream' : target, upstream, SETUP_OF[target]?.redis ? redis?.pid : undefined, authorizationOf(target));
      const wn = warmupNotes.get(target);
      if (wn !== undefined) {
        warmupNotes.delete(target);
        cell.note = cell.note === undefined ? wn : `${cell.note}; ${wn}`;
      }
      return cell;
    };
    for (const concurrency of settings.concurrency) {
      // The targets take turns, round after round (the order reversed every other round), so that a slow
      // stretch of this VM lands on all of them rather than on whichever was measured then.
      const rounds = new Map<TargetKind, Cell[]>(settings.targets.map((t) => [t, []]));
      for (let round = 0; round < settings.rounds; round++) {
        const order = round % 2 === 0 ? settings.targets : [...settings.targets].reverse();
        for (const target of order) {
          const measured = rounds.get(target)!;
          // A target that could not be measured is not tried again.
          if (measured.length > 0 && measured[0]!.status !== 'ok' && measured[0]!.status !== 'errors') continue;
          measured.push(await measureOnce(target, concurrency));
        }
      }
      for (const target of settings.targets) {
        const cell = combineRounds(rounds.get(target)!);
        cells.push(cell);
        process.stdout.write(cellRow(cell) + '\n');
      }
    }
    for (const concurrency of settings.concurrency) {
      if (settings.targets.includes('bare-hop')) for (const r of ratiosFor(cells, upstreamKind, era, concurrency)) process.stdout.write(ratioLine(r) + '\n');
    }
    // p99 at c=64, the pass-through against the bare hop in many adjacent pairs: the cells' three rounds are
    // too few to place a tail latency on either side of 1.2× on this VM.
    const passThrough = targets.get('gatehouse');
    const bareHop = targets.get('bare-hop');
    if (upstreamKind === 'minimal' && settings.p99Pairs > 0 && passThrough !== undefined && !(passThrough instanceof Error) && bareHop !== undefined && !(bareHop instanceof Error)) {
      try {
        const r = await measureP99Pairs({
          target: { name: 'gatehouse', url: passThrough.url, pid: passThrough.child.pid },
          against: { name: 'bare-hop', url: bareHop.url, pid: bareHop.child.pid },
          era,
          concurrency: P99_PAIRS_CONCURRENCY,
          pairs: settings.p99Pairs,
          seconds: settings.p99Seconds,
          warmupSeconds: P99_PAIRS_WARMUP_SECONDS,
          maxErrors: settings.maxErrors,
        });
        p99Pairs.push(r);
        process.stdout.write(p99PairsLine(r) + '\n');
      } catch (err) {
        p99Pairs.push({ era, concurrency: P99_PAIRS_CONCURRENCY, target: 'gatehouse', error: (err as Error).message });
        process.stdout.write(`p99 pairs (${era}): not measured: ${(err as Error).message}\n`);
      }
    }
    // The request log line, end to end: the pass-through with its line on and off in one process.
    if (upstreamKind === 'minimal' && settings.logToggleRounds > 0 && passThrough !== undefined && !(passThrough instanceof Error)) {
      try {
        const r = await measureLogToggle({ child: passThrough.child, configFile: configFileOf.get(passThrough.child)!, era, concurrency: LOG_TOGGLE_CONCURRENCY, rounds: settings.logToggleRounds, seconds: settings.logToggleSeconds });
        logLines.push(r);
        process.stdout.write(logToggleLine(r) + '\n');
      } catch (err) {
        logLines.push({ era, concurrency: LOG_TOGGLE_CONCURRENCY, error: (err as Error).message });
        process.stdout.write(`request log line (${era}): not measured: ${(err as Error).message}\n`);
      }
    }
    for (const [target, t] of targets) {
      if (t instanceof Error && !(t instanceof NotApplicable)) process.stdout.write(`${target} did not start:\n${t.message}\n`);
    }
  } finally {
    for (const c of started.reverse()) await stopChild(c);
    for (const r of redisStops.splice(0)) await r.stop();
  }
}

const redisStops: BenchRedis[] = [];

/** A target that cannot reach an upstream by design: its cells are skipped, not failed. */
class NotApplicable extends Error {}

async function main(): Promise<void> {
  installSignalCleanup();
  const startedAt = new Date();
  const meta = {
    startedAt: startedAt.toISOString(),
    node: process.version,
    cpuModel: cpuModel(),
    cores: os.cpus().length,
    kernel: os.release(),
    loadAverageAtStart: os.loadavg(),
    clockTicksPerSecond: clockTicksPerSecond(),
    gatehouseCommit: gitCommit(),
    settings,
  };
  process.stdout.write(
    `Gatehouse benchmark — node ${meta.node}, ${meta.cpuModel}, ${meta.cores} cores, CLK_TCK ${meta.clockTicksPerSecond}\n` +
      `per cell: ${settings.rounds} round(s), the targets taking turns, each a warm-up ≤${settings.warmupSeconds}s/≤${settings.warmupRequests} req and a measured phase ≤${settings.seconds}s/≤${settings.maxRequests} req (medians of the rounds); ` +
      `CPU and RSS are those of the process under test (the upstream for "direct")\n`,
  );
  const cells: Cell[] = [];
  try {
    for (const upstream of settings.upstreams) {
      for (const era of settings.eras) await runGroup(upstream, era, cells);
    }
  } finally {
    await stopAllChildren();
    for (const r of redisStops.splice(0)) await r.stop();
  }
  const ratios: Ratio[] = [];
  for (const upstream of settings.upstreams) for (const era of settings.eras) for (const c of settings.concurrency) ratios.push(...ratiosFor(cells, upstream, era, c));
  if (settings.targets.includes('bare-hop')) {
    process.stdout.write('\nEach target ÷ the bare hop in this run (`npm run bench:check` holds these against bench/limits.json):\n');
    for (const r of ratios) process.stdout.write(ratioLine(r) + '\n');
  }
  const finishedAt = new Date();
  const out = { meta: { ...meta, finishedAt: finishedAt.toISOString(), durationS: (finishedAt.getTime() - startedAt.getTime()) / 1000 }, cells, ratios, logLine: logLines, p99Pairs };
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  const json = JSON.stringify(out, null, 2) + '\n';
  writeFileSync(file, json);
  writeFileSync(path.join(RESULTS_DIR, 'latest.json'), json);
  const errored = cells.filter((c) => c.status === 'errors' || c.status === 'unavailable').length;
  const skipped = cells.filter((c) => c.status === 'skipped').length;
  process.stdout.write(`\n${cells.length} cells (${errored} with errors or unavailable, ${skipped} skipped by design) in ${out.meta.durationS.toFixed(0)} s; results: ${path.relative(ROOT, file)} and bench/results/latest.json\n`);
  if (errored > 0) process.exitCode = 1;
}

main().catch(async (err: unknown) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`);
  await stopAllChildren();
  process.exitCode = 1;
});
