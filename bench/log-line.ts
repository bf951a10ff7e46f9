// What the request log line costs on its own (issue 17 item 2: at most 5% of a call's CPU at c=16).
// The end-to-end bench compares the pass-through with and without the line, but on a 2-core VM the two
// cells move by more than the line costs. Here the line goes through the code a gateway runs: a `call
// end` event published on the pipeline's channel, the request log's subscriber (`logRequests`), the
// logger's batched stderr. Stderr is a pipe to this script's parent, which drains it as a log shipper
// would. The CPU of that loop, minus the same loop with nobody subscribed, is the line's cost. It is
// compared with the pass-through's CPU per call in the last `run.ts` results.
//
//   node --import tsx bench/log-line.ts          (writes results/<time>-log-line.json)

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../src/log/logger.js';
import { logRequests } from '../src/log/request-log.js';
import { channels, type CallEndEvent } from '../src/pipeline/events.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const RESULTS_DIR = path.join(BENCH_DIR, 'results');
const LINES = 200_000;
const WARMUP = 50_000;
/** Calls per event-loop turn, about what a busy gateway answers per turn at c=16. */
const PER_TURN = 16;

/** A tools/call body as a client sends it: the event's method and tool name come out of its parse. */
const BODY = '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}';

/**
 * The CPU (µs) of publishing `count` end events, yielding to the event loop as a gateway does. Each event is
 * new, as in a gateway: a fresh call id and duration, the method and tool name parsed from a body. Making
 * them costs the same with and without the line, so the difference is still the line's; with one event
 * reused for every line the line measured about 0.5 µs less (its strings' hashes and flat copies cached).
 */
async function publishLoop(count: number, edge: object): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const message = JSON.parse(BODY) as { method: string; params: { name: string } };
    const event: CallEndEvent = {
      callId: randomUUID(), edge, httpMethod: 'POST', status: 200, outcome: 'ok', seconds: 0.001 + (i % 1000) / 1e6, upstream: 'bench',
    };
    event.method = message.method;
    event.era = 'legacy';
    event.subject = 'anonymous';
    event.tool = message.params.name;
    channels.end.publish(event);
    if (i % PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

async function child(): Promise<void> {
  const edge = {};
  await publishLoop(WARMUP, edge);
  const bare = await publishLoop(LINES, edge);
  const log = createLogger('info');
  const stop = logRequests(edge, log);
  await publishLoop(WARMUP, edge);
  const logged = await publishLoop(LINES, edge);
  stop();
  log.flush();
  process.stdout.write(JSON.stringify({ bareUs: bare / LINES, loggedUs: logged / LINES }) + '\n');
}

function passThroughCpu(): { legacy?: number; modern?: number; file: string } | undefined {
  const file = path.join(RESULTS_DIR, 'latest.json');
  if (!existsSync(file)) return undefined;
  const run = JSON.parse(readFileSync(file, 'utf8')) as { cells: Array<{ upstream: string; era: string; concurrency: number; target: string; status: string; cpuUsPerReq?: number }> };
  const cpu = (era: string): number | undefined => run.cells.find((c) => c.upstream === 'minimal' && c.era === era && c.concurrency === 16 && c.target === 'gatehouse-nolog' && c.status === 'ok')?.cpuUsPerReq;
  return { legacy: cpu('legacy'), modern: cpu('modern'), file: 'results/latest.json' };
}

async function main(): Promise<void> {
  // The child's stderr (the log) is drained and counted here, as a log shipper would read it.
  const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let lines = 0;
  proc.stderr.on('data', (chunk: Buffer) => {
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
  });
  let out = '';
  proc.stdout.on('data', (chunk: Buffer) => (out += String(chunk)));
  const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve));
  if (code !== 0) throw new Error(`the measuring child exited with ${code}`);
  const { bareUs, loggedUs } = JSON.parse(out) as { bareUs: number; loggedUs: number };
  const lineUs = loggedUs - bareUs;
  const call = passThroughCpu();
  const share = (cpu: number | undefined): string => (cpu === undefined ? 'n/a' : `${((lineUs / cpu) * 100).toFixed(1)}% of the pass-through's ${cpu.toFixed(1)} µs per call (c=16, no log line)`);
  process.stdout.write(`request log line: ${lineUs.toFixed(2)} µs of CPU per call (loop ${bareUs.toFixed(2)} µs without it, ${loggedUs.toFixed(2)} µs with it; ${lines} lines written)\n`);
  process.stdout.write(`  legacy: ${share(call?.legacy)}\n  modern: ${share(call?.modern)}\n`);
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${new Date().toISOString().replace(/[:.]/g, '-')}-log-line.json`);
  writeFileSync(file, JSON.stringify({ node: process.version, lines: LINES, perTurn: PER_TURN, loopUs: bareUs, loopWithLineUs: loggedUs, lineUs, linesWritten: lines, passThrough: call }, null, 2) + '\n');
  process.stdout.write(`results: ${path.relative(process.cwd(), file)}\n`);
}

if (process.argv.includes('--child')) await child();
else await main();
