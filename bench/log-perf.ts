// Where the request log line's CPU goes (issue 17 item 2), by function: one pass-through process under one
// load, its line switched on and off (log.requests follows a reload, as in log-toggle.ts), and `perf
// record` of the process over each segment. The samples of each function, per call answered, on against
// off: what the line adds, and where. Several short segments of each state in turns, so the VM's slow
// stretches land on both. JavaScript frames are named through `--perf-basic-prof`; a frame's name can be
// stale (V8 reuses code space), which is why both states are measured in the very same process.
//
//   node --import tsx bench/log-perf.ts [--era legacy|modern] [--segments 8] [--seconds 4] [--top 30] [--out FILE.json]
//
// Needs `perf` (linux-perf) and permission to record another process of the same user.

import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFlags, type Era } from './common.js';
import { runLoad, type LoadControl } from './load.js';
import { switchRequestLog } from './log-toggle.js';
import { announcedUrl, gatehouseUrl, installSignalCleanup, startChild, stopChild, type Child } from './procs.js';
import { gatehouseArgs } from './setups.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH_DIR);
const SAMPLE_HZ = 999;
/** Left out after each switch: the reload, the calls in flight across it, V8 compiling again what changed. */
const SETTLE_MS = 1_500;
const WARMUP_S = 10;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Samples per symbol in one perf.data file. */
function samplesBySymbol(file: string): Map<string, number> {
  const report = spawnSync('perf', ['report', '-i', file, '--no-children', '--sort', 'sym', '--stdio', '-g', 'none', '-F', 'sample,sym'], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (report.status !== 0) throw new Error(`perf report failed: ${report.stderr}`);
  const out = new Map<string, number>();
  for (const line of report.stdout.split('\n')) {
    const m = /^\s*(\d+)\s+(.+?)\s*$/.exec(line);
    if (m === null) continue;
    out.set(m[2]!, (out.get(m[2]!) ?? 0) + Number(m[1]));
  }
  return out;
}

async function recordSegment(child: Child, file: string, seconds: number): Promise<void> {
  const perf = spawn('perf', ['record', '-F', String(SAMPLE_HZ), '-e', 'cpu-clock', '-p', String(child.pid), '-o', file, '--', 'sleep', String(seconds)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  perf.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => perf.on('exit', resolve));
  if (code !== 0) throw new Error(`perf record exited with ${code}: ${stderr.trim()}`);
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2), ['era', 'segments', 'seconds', 'top', 'out']);
  const era = (flags.era ?? 'legacy') as Era;
  const segments = Math.max(1, Math.min(40, Number(flags.segments ?? 8)));
  const seconds = Math.max(1, Math.min(30, Number(flags.seconds ?? 4)));
  const top = Number(flags.top ?? 30);
  installSignalCleanup();
  const state = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-log-perf-'));
  const upstream = await startChild('minimal-upstream', { args: ['--import', 'tsx', path.join(BENCH_DIR, 'minimal-upstream.ts')], cwd: ROOT, ready: (line) => announcedUrl(line) });
  const args = gatehouseArgs(ROOT, 'passthrough', upstream.url, state, 'info');
  const configFile = args[args.indexOf('--config') + 1]!;
  const gatehouse = await startChild('gatehouse (passthrough)', { args: ['--perf-basic-prof', ...args], cwd: ROOT, ready: gatehouseUrl });
  const control: LoadControl = { calls: 0, stop: false };
  const budgetS = WARMUP_S + 2 * segments * (seconds + SETTLE_MS / 1000 + 3) + 30;
  const load = runLoad({ url: gatehouse.url, era, concurrency: 16, warmup: { seconds: WARMUP_S, maxRequests: 10_000_000 }, measure: { seconds: budgetS, maxRequests: 100_000_000 }, maxErrors: 50, control });
  const totals = { on: new Map<string, number>(), off: new Map<string, number>() };
  const calls = { on: 0, off: 0 };
  try {
    await sleep((WARMUP_S + 2) * 1000);
    let first = true;
    for (let i = 0; i < segments; i++) {
      // on, off, off, on, on, off…: each state follows a switch as often as not.
      for (const on of first ? [true, false] : [false, true]) {
        await switchRequestLog(gatehouse, configFile, on);
        await sleep(SETTLE_MS);
        const file = path.join(state, `segment-${i}-${on ? 'on' : 'off'}.data`);
        const before = control.calls;
        await recordSegment(gatehouse, file, seconds);
        const key = on ? 'on' : 'off';
        calls[key] += control.calls - before;
        for (const [sym, n] of samplesBySymbol(file)) totals[key].set(sym, (totals[key].get(sym) ?? 0) + n);
        rmSync(file, { force: true });
      }
      first = !first;
    }
  } finally {
    control.stop = true;
    const r = await load.catch(() => undefined);
    await stopChild(gatehouse);
    await stopChild(upstream);
    rmSync(state, { recursive: true, force: true });
    if (r !== undefined && r.errors > 0) throw new Error(`${r.errors} calls failed: ${r.errorSamples.join('; ')}`);
  }
  const usPerCall = (key: 'on' | 'off', sym: string): number => ((totals[key].get(sym) ?? 0) * (1e6 / SAMPLE_HZ)) / calls[key];
  const sum = (key: 'on' | 'off'): number => [...totals[key].keys()].reduce((s, k) => s + usPerCall(key, k), 0);
  const symbols = [...new Set([...totals.on.keys(), ...totals.off.keys()])].map((sym) => ({ sym, onUs: usPerCall('on', sym), offUs: usPerCall('off', sym) }));
  symbols.sort((a, b) => b.onUs - b.offUs - (a.onUs - a.offUs));
  const onUs = sum('on');
  const offUs = sum('off');
  process.stdout.write(`${era} c=16, ${segments} segments of ${seconds} s per state: CPU per call ${onUs.toFixed(2)} µs with the line, ${offUs.toFixed(2)} without: ${(onUs - offUs >= 0 ? '+' : '') + (onUs - offUs).toFixed(2)} µs (${((100 * (onUs - offUs)) / offUs).toFixed(1)}%)\n`);
  process.stdout.write(`what it adds, by function (µs per call, on / off / difference):\n`);
  for (const s of symbols.slice(0, top)) process.stdout.write(`${s.onUs.toFixed(3).padStart(8)} ${s.offUs.toFixed(3).padStart(8)} ${(s.onUs - s.offUs >= 0 ? '+' : '') + (s.onUs - s.offUs).toFixed(3)}  ${s.sym}\n`);
  const file = flags.out ?? path.join(BENCH_DIR, 'results', `${new Date().toISOString().replace(/[:.]/g, '-')}-log-perf-${era}.json`);
  writeFileSync(file, `${JSON.stringify({ era, concurrency: 16, segments, seconds, sampleHz: SAMPLE_HZ, calls, onUs, offUs, top: symbols.slice(0, top) }, null, 2)}\n`);
  process.stdout.write(`wrote ${path.relative(process.cwd(), file)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
