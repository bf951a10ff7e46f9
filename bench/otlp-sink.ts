// The trace backend of the `gatehouse-trace-*` targets: a tiny OTLP/HTTP receiver on loopback that accepts
// `POST /v1/traces`, reads the body and discards it (200 `{}`), so the bench measures what recording and
// exporting spans costs Gatehouse, not what a collector does with them. It counts what it got, and prints
// the counts to stderr when it stops.
//
// Usage: node --import tsx bench/otlp-sink.ts [--port N]

import { createServer } from 'node:http';
import { announceListening, listenLoopback, parseFlags, stopOnSignals } from './common.js';

const PATH = '/v1/traces';
const flags = parseFlags(process.argv.slice(2), ['port']);
let exports = 0;
let bytes = 0;

const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  if (req.method !== 'POST' || req.url !== PATH) {
    req.resume();
    res.writeHead(404).end();
    return;
  }
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    exports++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});

await listenLoopback(server, Number(flags.port ?? 0));
announceListening(server, PATH, 'otlp-sink');
stopOnSignals(server, async () => {
  process.stderr.write(`otlp-sink: ${exports} export request(s), ${bytes} bytes\n`);
});
