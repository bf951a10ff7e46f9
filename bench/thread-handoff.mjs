// What one round trip between the main thread and a worker costs in CPU, carrying what the SQLite store's
// group commit carries (a message of 12 audit appends, a reply for each): through postMessage, as the store
// does (sqlite-store.ts), and through a SharedArrayBuffer with Atomics (the worker blocked in Atomics.wait,
// the main thread in Atomics.waitAsync), the "shared-memory ring" an earlier note proposed as a cheaper
// handoff. Each way runs ROUNDS times in turn, N round trips each, one at a time; the process's CPU (all
// threads) per round trip and the wall time are reported as medians.
//
//   node bench/thread-handoff.mjs [N=20000] [ROUNDS=3]

import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

const N = Number(process.argv[2] ?? 20_000);
const ROUNDS = Number(process.argv[3] ?? 3);
const ENTRY = '{"arguments":{"text":"hello"},"argumentsSha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","callId":"c-0123456789","latencyMs":1.234,"method":"tools/call","outcome":"ok","runId":"0b6d2a4e-1f3c-4e5a-9b7d-1234567890ab","subject":"bench","time":"2026-12-02T12:00:00.000Z","tool":"echo","toolRef":"bench/echo","upstream":"bench"}';
const HASH = 'abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789';

const batch = () => ({ requests: Array.from({ length: 12 }, (_, i) => ({ id: i, op: 'appendAudit', args: [ENTRY, 1_764_676_800_000 + i] })) });
const replies = (message) => message.requests.map((r) => ({ id: r.id, ok: true, value: { seq: r.id, hash: HASH } }));

async function viaPostMessage() {
  const worker = new Worker(new URL(import.meta.url), { workerData: { way: 'postMessage' } });
  await new Promise((ready) => worker.once('online', ready));
  const cpu = process.cpuUsage();
  const started = performance.now();
  let done = 0;
  await new Promise((finished) => {
    worker.on('message', () => (++done >= N ? finished() : worker.postMessage(batch())));
    worker.postMessage(batch());
  });
  const result = measured(cpu, started);
  await worker.terminate();
  return result;
}

async function viaAtomics() {
  const shared = new SharedArrayBuffer(1 << 20);
  const control = new Int32Array(shared, 0, 4);
  const bytes = new Uint8Array(shared, 64);
  const worker = new Worker(new URL(import.meta.url), { workerData: { way: 'atomics', shared } });
  await new Promise((ready) => worker.once('online', ready));
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < N; i++) {
    control[1] = encoder.encodeInto(JSON.stringify(batch()), bytes).written;
    const answered = Atomics.load(control, 2);
    Atomics.add(control, 0, 1);
    Atomics.notify(control, 0);
    const wait = Atomics.waitAsync(control, 2, answered);
    if (wait.async) await wait.value;
    JSON.parse(decoder.decode(bytes.slice(0, control[3])));
  }
  const result = measured(cpu, started);
  await worker.terminate();
  return result;
}

function measured(cpu, started) {
  const used = process.cpuUsage(cpu);
  return { cpuUs: (used.user + used.system) / N, wallUs: ((performance.now() - started) * 1000) / N };
}

function workerMain() {
  if (workerData.way === 'postMessage') {
    parentPort.on('message', (message) => parentPort.postMessage(replies(message)));
    return;
  }
  const control = new Int32Array(workerData.shared, 0, 4);
  const bytes = new Uint8Array(workerData.shared, 64);
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  let seen = 0;
  // Blocks the thread between messages: terminate() ends it.
  for (;;) {
    Atomics.wait(control, 0, seen);
    seen = Atomics.load(control, 0);
    const message = JSON.parse(decoder.decode(bytes.slice(0, control[1])));
    control[3] = encoder.encodeInto(JSON.stringify(replies(message)), bytes).written;
    Atomics.add(control, 2, 1);
    Atomics.notify(control, 2);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

if (isMainThread) {
  const ways = { postMessage: viaPostMessage, atomics: viaAtomics };
  const seen = { postMessage: [], atomics: [] };
  for (let round = 0; round < ROUNDS; round++) for (const [name, run] of Object.entries(ways)) seen[name].push(await run());
  for (const [name, results] of Object.entries(seen)) {
    process.stdout.write(`${name.padEnd(12)} CPU ${median(results.map((r) => r.cpuUs)).toFixed(1)} µs per round trip (all threads), wall ${median(results.map((r) => r.wallUs)).toFixed(1)} µs  [${results.map((r) => r.cpuUs.toFixed(1)).join(', ')}]\n`);
  }
} else {
  workerMain();
}
