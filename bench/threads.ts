// CPU per call of each thread of one Gatehouse process under the bench's load (issue 17): the main thread,
// the SQLite writer (a worker thread, in setups that use the store) and V8's and libuv's helpers. The
// bench's cells give a process's CPU as a whole; this says which thread it went to, from
// /proc/<pid>/task/<tid>/schedstat (on-CPU nanoseconds, and times run) read before and after the measured phase.
//
//   node --import tsx bench/threads.ts [--era legacy|modern] [--setup passthrough|audited|governed|policy]
//        [--concurrency 16] [--seconds 10] [--warmup 8] [--log on|off] [--node "NODE FLAGS"]
//        [--sse on]      (the minimal upstream answers tools/call with an SSE stream, as the SDKs' servers do)
//        [--perf FILE]   (also `perf record -e cpu-clock -g` of the process over the measured phase; start
//                         Gatehouse with --node "--perf-basic-prof" to name its JavaScript frames)
//
// Every thread's comm is "node", so the main thread is told by its id (the process id) and the others are
// listed by their CPU: in a setup with the store, the busiest of them is the writer.

import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFlags, type Era } from './common.js';
import { runLoad, warmUpProcess } from './load.js';
import { announcedUrl, gatehouseUrl, installSignalCleanup, startChild, stopChild, type Child } from './procs.js';
import { authorizationFor, gatehouseArgs, SETUPS, type Setup } from './setups.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');

/** A thread's on-CPU nanoseconds, and how many times it was put on a CPU (each wake from a sleep is one). */
interface ThreadCpu {
  ns: number;
  runs: number;
}

/** schedstat of each thread of `pid`, by thread id. */
function threadCpu(pid: number): Map<number, ThreadCpu> {
  const cpu = new Map<number, ThreadCpu>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const [ns, , runs] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
      cpu.set(Number(tid), { ns: Number(ns), runs: Number(runs) });
    } catch {
      // the thread ended between readdir and read
    }
  }
  return cpu;
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), ['era', 'setup', 'concurrency', 'seconds', 'warmup', 'log', 'node', 'perf', 'sse']);
  const era = (flags.era ?? 'legacy') as Era;
  const setup = (flags.setup ?? 'governed') as Setup;
  if (!SETUPS.includes(setup)) throw new Error(`--setup must be one of ${SETUPS.join(', ')}`);
  const concurrency = Number(flags.concurrency ?? 16);
  const state = path.join(os.tmpdir(), `gatehouse-threads-${process.pid}`);
  installSignalCleanup();
  const upstream = await startChild('minimal-upstream', { args: ['--import', 'tsx', path.join(BENCH_DIR, 'minimal-upstream.ts'), ...(flags.sse === 'on' ? ['--sse', 'on'] : [])], cwd: ROOT, ready: (line) => announcedUrl(line) });
  let gatehouse: Child | undefined;
  try {
    const nodeFlags = flags.node ? flags.node.split(' ').filter(Boolean) : [];
    gatehouse = await startChild(`gatehouse (${setup})`, { args: [...nodeFlags, ...gatehouseArgs(ROOT, setup, upstream.url, state, (flags.log ?? 'on') === 'on' ? 'info' : 'warn')], cwd: ROOT, ready: gatehouseUrl });
    const pid = gatehouse.pid;
    const authorization = authorizationFor(setup);
    await warmUpProcess(gatehouse.url, era, concurrency, { seconds: Number(flags.warmup ?? 8), maxRequests: 5_000_000 }, authorization);
    let before = new Map<number, ThreadCpu>();
    let after = new Map<number, ThreadCpu>();
    let perf: ChildProcess | undefined;
    const r = await runLoad({
      url: gatehouse.url,
      era,
      concurrency,
      ...(authorization !== undefined ? { authorization } : {}),
      warmup: { seconds: 1, maxRequests: 50_000 },
      measure: { seconds: Number(flags.seconds ?? 10), maxRequests: 2_000_000 },
      maxErrors: 50,
      onMeasureStart: () => {
        before = threadCpu(pid);
        if (flags.perf) perf = spawn('perf', ['record', '-e', 'cpu-clock', '-F', '1999', '-g', '-p', String(pid), '-o', flags.perf], { stdio: 'ignore' });
      },
      onMeasureEnd: () => {
        after = threadCpu(pid);
        perf?.kill('SIGINT');
      },
    });
    const perCall = (ns: number): string => `${(ns / 1000 / r.requests).toFixed(2)} µs`;
    const rows = [...after].map(([tid, t]) => ({ tid, ns: t.ns - (before.get(tid)?.ns ?? 0), runs: t.runs - (before.get(tid)?.runs ?? 0) })).filter((t) => t.ns > 0);
    rows.sort((a, b) => (a.tid === pid ? -1 : b.tid === pid ? 1 : b.ns - a.ns));
    const total = rows.reduce((sum, t) => sum + t.ns, 0);
    process.stdout.write(`${setup} ${era} c=${concurrency}: ${r.requests} calls, ${r.errors} errors, ${r.rps.toFixed(0)} req/s; CPU per call ${perCall(total)}\n`);
    // Runs per call: how often the thread was woken (or preempted) per call. A thread that has work waiting
    // when it finishes a turn runs on; one that sleeps between calls pays a wake-up (in a VM, an interrupt
    // to another vCPU) each time.
    for (const t of rows) process.stdout.write(`  ${t.tid === pid ? 'main thread' : `thread ${t.tid}`}`.padEnd(20) + `${perCall(t.ns).padStart(10)}  ${(t.runs / r.requests).toFixed(2)} runs per call\n`);
    if (perf !== undefined) await new Promise((done) => (perf!.exitCode !== null ? done(undefined) : perf!.once('exit', done)));
  } finally {
    if (gatehouse) await stopChild(gatehouse);
    await stopChild(upstream);
    rmSync(state, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
