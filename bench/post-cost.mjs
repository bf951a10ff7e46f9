// What `postMessage` to a worker thread costs its sender, by what the message carries: a three-value ping,
// and a commit group of 16 bench-sized audit appends as the SQLite store sends it (sqlite-wire.ts's flat
// form). One message at a time, the next only after the worker's reply, so the worker is asleep in its
// event loop each time, as the SQLite writer is between commits. Prints the wall time spent inside
// `postMessage` per message (the sender's share: copying the message and waking the worker).
//
//   node bench/post-cost.mjs [N=3000] [ROUNDS=2]

import { Worker } from 'node:worker_threads';

const N = Number(process.argv[2] ?? 3_000);
const ROUNDS = Number(process.argv[3] ?? 2);
const ENTRY = '{"arguments":{"text":"hello"},"argumentsSha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","callId":"c-0123456789","latencyMs":1.234,"method":"tools/call","outcome":"ok","runId":"0b6d2a4e-1f3c-4e5a-9b7d-1234567890ab","subject":"bench","time":"2026-12-02T12:00:00.000Z","tool":"echo","toolRef":"bench/echo","upstream":"bench"}';

const worker = new Worker(`require('node:worker_threads').parentPort.on('message', (m) => require('node:worker_threads').parentPort.postMessage(m.length));`, { eval: true });

function group() {
  const flat = [];
  for (let i = 0; i < 16; i++) flat.push(i, 'appendAudit', 2, ENTRY.slice(0, -1) + `,"n":${i}}`, 1_764_676_800_000 + i);
  return flat;
}

async function measure(label, make) {
  let inside = 0n;
  for (let i = 0; i < N; i++) {
    const message = make();
    const replied = new Promise((resolve) => worker.once('message', resolve));
    const t0 = process.hrtime.bigint();
    worker.postMessage(message);
    inside += process.hrtime.bigint() - t0;
    await replied;
  }
  console.log(`${label.padEnd(22)} ${(Number(inside) / N / 1e3).toFixed(1)} µs inside postMessage per message`);
}

try {
  for (let round = 0; round < ROUNDS; round++) {
    await measure('ping (3 values)', () => [1, 'ping', 0]);
    await measure('16 appends (80 values)', group);
  }
} finally {
  await worker.terminate();
}
