// CPU per call against the age of the process: how long a freshly started target keeps getting cheaper
// under load (V8 compiling its hot functions, the heap settling) before its figure means what a server
// that has been up for hours would cost. run.ts's per-process warm-up is chosen from this curve.
//
//   node --import tsx bench/age.ts [--targets bare-hop,passthrough,governed] [--era legacy|modern]
//        [--windows 15] [--seconds 2] [--out FILE.json]
//
// Every target starts at once in front of one minimal upstream; then, window after window, each takes a
// turn of `--seconds` at c=16, with no warm-up of its own, and its CPU per call in that turn is printed
// beside the process's age and the calls it had served before it. A target is `bare-hop` or one of this
// build's setups (bench/setups.ts).

import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFlags, type Era } from './common.js';
import { runLoad } from './load.js';
import { announcedUrl, clockTicksPerSecond, gatehouseUrl, installSignalCleanup, readCpuTicks, startChild, stopChild, type Child } from './procs.js';
import { authorizationFor, gatehouseArgs, SETUPS, type Setup } from './setups.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');

interface Window {
  ageS: number;
  callsBefore: number;
  cpuUsPerCall: number;
}

interface Target {
  label: string;
  child: Child;
  startedAt: number;
  authorization: string | undefined;
  calls: number;
  windows: Window[];
}

async function startTarget(label: string, upstreamUrl: string, state: string): Promise<Target> {
  const startedAt = Date.now();
  if (label === 'bare-hop') {
    const child = await startChild('bare-hop', { args: ['--import', 'tsx', path.join(BENCH_DIR, 'bare-hop.ts'), '--upstream', upstreamUrl], cwd: ROOT, ready: (line) => announcedUrl(line) });
    return { label, child, startedAt, authorization: undefined, calls: 0, windows: [] };
  }
  const setup = label as Setup;
  if (!SETUPS.includes(setup)) throw new Error(`--targets: ${label} is neither bare-hop nor a setup (${SETUPS.join(', ')})`);
  const child = await startChild(`gatehouse ${setup}`, { args: gatehouseArgs(ROOT, setup, upstreamUrl, state, 'info'), cwd: ROOT, ready: gatehouseUrl });
  return { label, child, startedAt, authorization: authorizationFor(setup), calls: 0, windows: [] };
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), ['targets', 'era', 'windows', 'seconds', 'out']);
  const labels = (flags.targets ?? 'bare-hop,passthrough,governed').split(',');
  const era = (flags.era ?? 'legacy') as Era;
  const windows = Math.min(100, Number(flags.windows ?? 15));
  const seconds = Math.min(30, Number(flags.seconds ?? 2));
  const state = path.join(os.tmpdir(), `gatehouse-age-${process.pid}`);
  installSignalCleanup();
  const upstream = await startChild('minimal-upstream', { args: ['--import', 'tsx', path.join(BENCH_DIR, 'minimal-upstream.ts')], cwd: ROOT, ready: (line) => announcedUrl(line) });
  const targets: Target[] = [];
  try {
    for (const label of labels) targets.push(await startTarget(label, upstream.url, state));
    const tick = clockTicksPerSecond();
    process.stdout.write(`${era} c=16, ${windows} windows of ${seconds} s per target: CPU µs per call (process age s, calls served before)\n`);
    for (let w = 0; w < windows; w++) {
      const row: string[] = [];
      for (const t of targets) {
        const ageS = (Date.now() - t.startedAt) / 1000;
        const before = readCpuTicks(t.child.pid);
        const r = await runLoad({ url: t.child.url, era, concurrency: 16, ...(t.authorization !== undefined ? { authorization: t.authorization } : {}), warmup: { seconds: 0, maxRequests: 0 }, measure: { seconds, maxRequests: 1_000_000 }, maxErrors: 50 });
        if (r.errors > 0) throw new Error(`${t.label}: ${r.errors} failed calls`);
        const cpuUsPerCall = (((readCpuTicks(t.child.pid) - before) / tick) * 1e6) / r.requests;
        t.windows.push({ ageS: Math.round(ageS * 10) / 10, callsBefore: t.calls, cpuUsPerCall: Math.round(cpuUsPerCall * 10) / 10 });
        t.calls += r.requests;
        row.push(`${t.label} ${cpuUsPerCall.toFixed(0).padStart(4)} (${ageS.toFixed(0)} s, ${t.calls - r.requests})`);
      }
      process.stdout.write(`${row.join('   ')}\n`);
    }
    if (flags.out !== undefined) writeFileSync(flags.out, `${JSON.stringify({ era, concurrency: 16, seconds, node: process.version, cpus: os.cpus().length, targets: targets.map((t) => ({ target: t.label, windows: t.windows })) }, null, 2)}\n`);
  } finally {
    for (const t of targets) await stopChild(t.child);
    await stopChild(upstream);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
