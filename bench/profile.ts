// CPU profiles of Gatehouse under the bench's load (issue 17 item 1): where one `tools/call` spends its time.
// Starts the minimal upstream and one Gatehouse (`dist/main.js`, built) with `--cpu-prof`, sends `tools/call`
// at one concurrency for a few seconds, stops Gatehouse with SIGTERM (so V8 writes the profile), then prints
// the functions with the most self time and the share of each part of the code. The `.cpuprofile` opens
// as a flame graph in Chrome DevTools (Performance › Load profile) or https://www.speedscope.app.
//
//   node --import tsx bench/profile.ts [--era legacy|modern] [--setup passthrough|audited|governed]
//        [--concurrency 16] [--seconds 5] [--warmup SECONDS] [--log on|off] [--sse on] [--out bench/profiles/NAME]
//   node --import tsx bench/profile.ts --summarise FILE.cpuprofile      (the summary of a profile taken before)
//
// Without --warmup the profile is `--cpu-prof`'s: the whole life of the process (1.5 s of warm-up included),
// with a profile of each worker thread too. With --warmup, the process is first put under load for that
// many seconds and only the measured phase of its main thread is profiled (bench/profile-hook.mjs): a young
// process is still compiling its hot code (bench/age.ts), so that is the profile of a server that has been up
// for a while. The writer thread's share is then not in the profile: see its per-thread CPU instead.
//
// `passthrough`: audit off, no policy (the pass-through of issue 17); `audited`: the default config, every
// call audited to SQLite; `governed`: the bench's governed config (bench/setups.ts).

import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFlags, type Era } from './common.js';
import { runLoad, warmUpProcess } from './load.js';
import { announcedUrl, gatehouseUrl, installSignalCleanup, startChild, stopChild, type Child } from './procs.js';
import { authorizationFor, gatehouseArgs, SETUPS, type Setup } from './setups.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Which part of the code a script belongs to, for the summary. */
function partOf(url: string, fn: string): string {
  if (url === '') return fn.startsWith('(') ? fn : '(native)';
  const dist = url.indexOf('/dist/');
  if (dist >= 0 && !url.includes('node_modules')) return `gatehouse ${url.slice(dist + 6).split('/').slice(0, -1).join('/') || '.'}`;
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split('/');
    return `dep ${rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.startsWith('node:')) return `node ${url.slice(5).split('/')[0]}`;
  return url;
}

export function summarise(profile: CpuProfile, top = 30): string {
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) self.set(profile.samples[i]!, (self.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const byFunction = new Map<string, number>();
  const byPart = new Map<string, number>();
  for (const node of profile.nodes) {
    const t = self.get(node.id) ?? 0;
    if (t === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url === '' ? '' : ` ${url.replace(/^file:\/\/.*?\/(dist|node_modules)\//, '$1/')}:${lineNumber + 1}`;
    const key = `${functionName || '(anonymous)'}${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + t);
    const part = partOf(url, functionName);
    byPart.set(part, (byPart.get(part) ?? 0) + t);
  }
  // Each sample charged to the nearest Gatehouse function on its stack: what Gatehouse code causes, node
  // and library work included (a write under res.end() is charged to whoever ended the response).
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n] as const));
  const byCause = new Map<string, number>();
  for (const [id, t] of self) {
    let cause: string | undefined;
    for (let at: number | undefined = id; at !== undefined && cause === undefined; at = parent.get(at)) {
      const { functionName, url, lineNumber } = byId.get(at)!.callFrame;
      const dist = url.indexOf('/dist/');
      if (dist >= 0 && !url.includes('node_modules')) cause = `${functionName || '(anonymous)'} ${url.slice(dist + 6)}:${lineNumber + 1}`;
    }
    const key = cause ?? `(no Gatehouse frame) ${partOf(byId.get(id)!.callFrame.url, byId.get(id)!.callFrame.functionName)}`;
    byCause.set(key, (byCause.get(key) ?? 0) + t);
  }
  const pct = (t: number): string => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
  const rows = (m: Map<string, number>, n: number): string[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, t]) => `${pct(t)}  ${k}`);
  return [
    `self time: ${(total / 1e6).toFixed(2)} s sampled`,
    '',
    'by part of the code:',
    ...rows(byPart, 25),
    '',
    `top ${top} functions by self time:`,
    ...rows(byFunction, top),
    '',
    `top ${top} Gatehouse functions by the time they cause (their own and what they call, up to the next Gatehouse frame):`,
    ...rows(byCause, top),
  ].join('\n');
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), ['era', 'setup', 'concurrency', 'seconds', 'warmup', 'log', 'out', 'summarise', 'sse']);
  if (flags.summarise !== undefined) {
    process.stdout.write(`${summarise(JSON.parse(readFileSync(flags.summarise, 'utf8')) as CpuProfile)}\n`);
    return;
  }
  const era = (flags.era ?? 'modern') as Era;
  const setup = (flags.setup ?? 'passthrough') as Setup;
  if (!SETUPS.includes(setup)) throw new Error(`--setup must be one of ${SETUPS.join(', ')}`);
  const concurrency = Number(flags.concurrency ?? 16);
  const seconds = Number(flags.seconds ?? 5);
  const logOn = (flags.log ?? 'on') === 'on';
  const warmupSeconds = flags.warmup === undefined ? undefined : Number(flags.warmup);
  const out = path.resolve(flags.out ?? path.join(BENCH_DIR, 'profiles', `${setup}-${era}-c${concurrency}${logOn ? '' : '-nolog'}`));
  const state = path.join(os.tmpdir(), `gatehouse-profile-${process.pid}`);
  const tmpDir = path.join(state, 'prof');
  mkdirSync(tmpDir, { recursive: true });
  installSignalCleanup();

  const upstream = await startChild('minimal-upstream', {
    args: ['--import', 'tsx', path.join(BENCH_DIR, 'minimal-upstream.ts'), ...(flags.sse === 'on' ? ['--sse', 'on'] : [])],
    cwd: ROOT,
    ready: (line) => announcedUrl(line),
  });
  let gatehouse: Child | undefined;
  try {
    const hookOut = path.join(tmpDir, 'measured.cpuprofile');
    const profiler = warmupSeconds === undefined ? ['--cpu-prof', '--cpu-prof-dir', tmpDir] : ['--import', path.join(BENCH_DIR, 'profile-hook.mjs')];
    gatehouse = await startChild(`gatehouse (${setup})`, {
      args: [...profiler, ...gatehouseArgs(ROOT, setup, upstream.url, state, logOn ? 'info' : 'warn')],
      cwd: ROOT,
      ready: gatehouseUrl,
      env: { ...process.env, GATEHOUSE_PROFILE_OUT: hookOut },
    });
    const authorization = authorizationFor(setup);
    await warmUpProcess(gatehouse.url, era, 16, { seconds: warmupSeconds ?? 1.5, maxRequests: 5_000_000 }, authorization);
    const measured = gatehouse;
    const r = await runLoad({
      url: gatehouse.url,
      era,
      concurrency,
      ...(authorization !== undefined ? { authorization } : {}),
      warmup: { seconds: 1, maxRequests: 20_000 },
      measure: { seconds, maxRequests: 500_000 },
      maxErrors: 50,
      ...(warmupSeconds !== undefined ? { onMeasureStart: () => void process.kill(measured.pid, 'SIGUSR2'), onMeasureEnd: () => void process.kill(measured.pid, 'SIGUSR2') } : {}),
    });
    process.stdout.write(`${setup} ${era} c=${concurrency} log ${logOn ? 'on' : 'off'}: ${r.requests} requests, ${r.errors} errors, ${r.rps.toFixed(0)} req/s, p99 ${r.p99Ms.toFixed(2)} ms\n`);
    if (warmupSeconds !== undefined) {
      for (let waited = 0; !existsSync(hookOut) && waited < 10_000; waited += 100) await new Promise((done) => setTimeout(done, 100));
      if (!existsSync(hookOut)) throw new Error('the profile hook wrote no profile');
    }
    await stopChild(gatehouse);
    gatehouse = undefined;
    // One file per thread, named CPU.<date>.<time>.<pid>.<thread>.<seq>: thread 0 is the main thread; the
    // others are workers (the SQLite writer).
    const files = readdirSync(tmpDir).filter((f) => f.endsWith('.cpuprofile')).sort();
    const main = warmupSeconds !== undefined ? 'measured.cpuprofile' : files.find((f) => f.split('.').at(-3) === '0');
    if (main === undefined) throw new Error('Gatehouse wrote no profile (did it exit on SIGTERM?)');
    mkdirSync(path.dirname(out), { recursive: true });
    renameSync(path.join(tmpDir, main), `${out}.cpuprofile`);
    const summary = summarise(JSON.parse(readFileSync(`${out}.cpuprofile`, 'utf8')) as CpuProfile);
    const workers = files
      .filter((f) => f !== main)
      .map((f, i) => {
        const profile = JSON.parse(readFileSync(path.join(tmpDir, f), 'utf8')) as CpuProfile;
        renameSync(path.join(tmpDir, f), `${out}.worker-${i + 1}.cpuprofile`);
        return `worker thread ${i + 1}:\n${summarise(profile, 10)}`;
      });
    const text = [summary, ...workers].join('\n\n');
    const span = warmupSeconds === undefined ? `${seconds} s measured (plus warm-up)` : `the ${seconds} s measured after ${warmupSeconds} s of warm-up, main thread only`;
    writeFileSync(`${out}.txt`, `${setup} ${era} c=${concurrency}, request log ${logOn ? 'on' : 'off'}, ${span}, ${r.requests} requests\n\n${text}\n`);
    process.stdout.write(`${text}\n\nwrote ${out}.cpuprofile${workers.length > 0 ? ` (and ${workers.length} worker profile(s))` : ''} and ${out}.txt\n`);
  } finally {
    if (gatehouse) await stopChild(gatehouse);
    await stopChild(upstream);
    rmSync(state, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
