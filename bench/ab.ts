// Interleaved A/B: CPU per call of two or more Gatehouse processes, measured in alternating short rounds
// against one minimal upstream, so the drift of this VM (±30% between runs of the same code) lands on every
// target alike. All targets run at once and take turns under load; the idle ones cost next to nothing.
// Reports, per target, the median and the spread of its rounds, and each median's ratio to the first
// target's. Used to decide a change (is it cheaper?), where run.ts's single cells cannot tell 5% apart.
//
//   node --import tsx bench/ab.ts [--targets passthrough,governed,baseline:DIR,baseline-setup:governed:DIR]
//        [--era legacy|modern] [--concurrency 16] [--rounds 8] [--seconds 2] [--instances 2] [--warmup 10]
//        [--log on|off] [--sse on]   (--sse on: the upstream answers tools/call with an SSE stream, as SDK servers do)
//        [--upstream minimal|sdk-legacy]   (sdk-legacy: the v1 SDK's server, bench/sdk-upstream-legacy.ts; legacy era only)
//        [--out FILE.json]
//
// Each target runs as `--instances` processes (default 2), each measured every round: on this VM two
// processes of one build can differ by several percent for as long as they live (where their memory and
// threads landed), which one process per target would read as a difference between the targets.
//
// A target is `bare-hop` (bench/bare-hop.ts, the floor the ratios of run.ts are taken to), one of this
// build's setups (bench/setups.ts), `baseline:DIR` (another checkout's built
// dist/main.js, started with `--upstream` and no store, as run.ts's `baseline`), or `baseline-setup:SETUP:DIR`
// (another checkout started with one of this build's setups, for a build that reads that config). A `+nolog`
// suffix starts that target at `--log-level warn`, without its request log line, whatever `--log` says:
// `--targets passthrough,passthrough+nolog` is what the line costs. A `+node=FLAG` suffix starts that target's
// processes with a flag for node (`governed,governed+node=--max-semi-space-size=32`: what a V8 setting does).

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, parseFlags, type Era } from './common.js';
import { runLoad, warmUpProcess } from './load.js';
import { announcedUrl, clockTicksPerSecond, gatehouseUrl, installSignalCleanup, readCpuTicks, startChild, stopChild, type Child } from './procs.js';
import { authorizationFor, gatehouseArgs, SETUPS, type Setup } from './setups.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');

interface Target {
  label: string;
  children: Child[];
  authorization: string | undefined;
  cpuPerCall: number[];
  p99Ms: number[];
  rps: number[];
}

/** The last suffix of a target. */
const SUFFIX = /\+(nolog|node=[^+]+)$/;

/** A target's suffixes: `+nolog`, and `+node=FLAG` (a flag for node, before the script; may be given more than once). */
function suffixesOf(target: string): { spec: string; nolog: boolean; nodeFlags: string[] } {
  let spec = target;
  let nolog = false;
  const nodeFlags: string[] = [];
  for (let m = SUFFIX.exec(spec); m !== null; m = SUFFIX.exec(spec)) {
    if (m[1] === 'nolog') nolog = true;
    else nodeFlags.unshift(m[1]!.slice('node='.length));
    spec = spec.slice(0, m.index);
  }
  return { spec, nolog, nodeFlags };
}

interface Launch {
  root: string;
  args: string[];
  authorization: string | undefined;
  /** The URL a started child announces (Gatehouse and the bare hop say it differently). */
  ready?: (line: string) => string | undefined;
}

function argsOf(target: string, upstreamUrl: string, state: string, defaultLogLevel: string): Launch {
  const { spec, nolog, nodeFlags } = suffixesOf(target);
  const launch = scriptArgsOf(spec, upstreamUrl, state, nolog ? 'warn' : defaultLogLevel);
  return { ...launch, args: [...nodeFlags, ...launch.args] };
}

function scriptArgsOf(spec: string, upstreamUrl: string, state: string, logLevel: string): Launch {
  const [kind, ...rest] = spec.split(':');
  if (kind === 'bare-hop') {
    return { root: ROOT, args: ['--import', 'tsx', path.join(BENCH_DIR, 'bare-hop.ts'), '--upstream', upstreamUrl], authorization: undefined, ready: (line) => announcedUrl(line) };
  }
  if (kind === 'baseline') {
    const root = path.resolve(rest.join(':'));
    return { root, args: [path.join(root, 'dist', 'main.js'), 'serve', '--upstream', upstreamUrl, '--host', '127.0.0.1', '--port', '0', '--log-level', logLevel], authorization: undefined };
  }
  if (kind === 'baseline-setup') {
    const setup = rest[0] as Setup;
    const root = path.resolve(rest.slice(1).join(':'));
    if (!SETUPS.includes(setup)) throw new Error(`unknown setup ${setup}`);
    return { root, args: gatehouseArgs(root, setup, upstreamUrl, path.join(state, 'baseline'), logLevel), authorization: authorizationFor(setup) };
  }
  const setup = kind as Setup;
  if (!SETUPS.includes(setup)) throw new Error(`--targets: ${spec} is neither a setup (${SETUPS.join(', ')}) nor bare-hop nor baseline:DIR`);
  return { root: ROOT, args: gatehouseArgs(ROOT, setup, upstreamUrl, state, logLevel), authorization: authorizationFor(setup) };
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), ['targets', 'era', 'concurrency', 'rounds', 'seconds', 'instances', 'warmup', 'log', 'out', 'sse', 'upstream']);
  const specs = (flags.targets ?? 'passthrough,governed').split(',');
  const era = (flags.era ?? 'legacy') as Era;
  const concurrency = Number(flags.concurrency ?? 16);
  const rounds = Math.min(50, Number(flags.rounds ?? 8));
  const seconds = Math.min(30, Number(flags.seconds ?? 2));
  const instances = Math.max(1, Math.min(4, Number(flags.instances ?? 2)));
  // A young process is still compiling its hot code: CPU per call settles after about 10,000 calls (bench/age.ts).
  const warmupSeconds = Math.max(0, Math.min(120, Number(flags.warmup ?? 10)));
  const logLevel = (flags.log ?? 'on') === 'on' ? 'info' : 'warn';
  const state = path.join(os.tmpdir(), `gatehouse-ab-${process.pid}`);
  mkdirSync(state, { recursive: true });
  installSignalCleanup();

  const upstreamScript = flags.upstream === 'sdk-legacy' ? 'sdk-upstream-legacy.ts' : 'minimal-upstream.ts';
  const upstream = await startChild(upstreamScript, { args: ['--import', 'tsx', path.join(BENCH_DIR, upstreamScript), ...(flags.sse === 'on' ? ['--sse', 'on'] : [])], cwd: ROOT, ready: (line) => announcedUrl(line) });
  const targets: Target[] = [];
  try {
    for (const spec of specs) targets.push({ label: spec, children: [], authorization: undefined, cpuPerCall: [], p99Ms: [], rps: [] });
    // Started in turns (A, B, A, B), so no target's processes are all the first or all the last.
    for (let n = 0; n < instances; n++) {
      for (const t of targets) {
        const { root, args, authorization, ready } = argsOf(t.label, upstream.url, path.join(state, String(n)), logLevel);
        const child = await startChild(`${t.label} #${n + 1}`, { args, cwd: root, ready: ready ?? gatehouseUrl });
        await warmUpProcess(child.url, era, concurrency, { seconds: warmupSeconds, maxRequests: 1_000_000 }, authorization);
        t.children.push(child);
        t.authorization = authorization;
      }
    }
    const tick = clockTicksPerSecond();
    for (let round = 0; round < rounds; round++) {
      // Alternate the order too, so no target always follows the same one.
      const runs = targets.flatMap((t) => t.children.map((child) => ({ t, child })));
      const order = round % 2 === 0 ? runs : [...runs].reverse();
      for (const { t, child } of order) {
        let t0 = 0;
        let t1 = 0;
        const r = await runLoad({
          url: child.url,
          era,
          concurrency,
          ...(t.authorization !== undefined ? { authorization: t.authorization } : {}),
          warmup: { seconds: 0.3, maxRequests: 5_000 },
          measure: { seconds, maxRequests: 200_000 },
          maxErrors: 50,
          onMeasureStart: () => (t0 = readCpuTicks(child.pid)),
          onMeasureEnd: () => (t1 = readCpuTicks(child.pid)),
        });
        if (r.errors > 0 || r.requests === 0) throw new Error(`${t.label}: ${r.errors} errors in round ${round + 1}`);
        t.cpuPerCall.push((((t1 - t0) / tick) * 1e6) / r.requests);
        t.p99Ms.push(r.p99Ms);
        t.rps.push(r.rps);
      }
    }
  } finally {
    for (const t of targets) for (const child of t.children) await stopChild(child);
    await stopChild(upstream);
  }
  const first = median(targets[0]!.cpuPerCall);
  const rows = targets.map((t) => {
    const sorted = [...t.cpuPerCall].sort((a, b) => a - b);
    const med = median(sorted);
    return { target: t.label, medianUs: Math.round(med * 10) / 10, minUs: Math.round(sorted[0]! * 10) / 10, maxUs: Math.round(sorted.at(-1)! * 10) / 10, ratioToFirst: Math.round((med / first) * 1000) / 1000, medianP99Ms: Math.round(median(t.p99Ms) * 1000) / 1000, medianRps: Math.round(median(t.rps)), rounds: t.cpuPerCall.map((x) => Math.round(x * 10) / 10) };
  });
  process.stdout.write(`${era} c=${concurrency}, ${rounds} rounds of ${seconds} s on each of ${instances} processes per target, log ${logLevel === 'info' ? 'on' : 'off'}${flags.sse === 'on' ? ', SSE answers' : ''}: CPU µs per call (median [min–max]), ratio of medians to ${targets[0]!.label}; median p99 and req/s\n`);
  for (const r of rows) process.stdout.write(`  ${r.target.padEnd(40)} ${r.medianUs.toFixed(1).padStart(7)} [${r.minUs.toFixed(1)}–${r.maxUs.toFixed(1)}]  ${r.ratioToFirst.toFixed(3)}×   p99 ${r.medianP99Ms.toFixed(2)} ms   ${r.medianRps} req/s\n`);
  if (flags.out !== undefined) writeFileSync(flags.out, `${JSON.stringify({ date: new Date().toISOString(), era, concurrency, rounds, seconds, instances, log: logLevel === 'info', targets: rows }, null, 2)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
