// `gatehouse pins accept REF` accepts exactly the change it was shown (README: "accepting the change"): when
// the listing shows no change for REF, nothing is posted, so a definition that changes between the listing and
// the accept is never accepted unseen. The admin API here is a stand-in that lets the test place that change.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { pinsCommand } from '../../../src/cli/pins.js';

const posts: Array<{ path: string; body: string }> = [];
let server: Server;
let url: string;
const PINNED = { ref: 'up/lookup', state: 'pinned', pinned: { sha256: 'a'.repeat(64), at: 0 }, changes: [] };

before(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/pins') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ pins: [PINNED] }));
      // The upstream changed the tool after the listing: a digest-less accept would take that change unseen.
      posts.push({ path: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ pin: { ref: 'up/lookup', pinned: { sha256: 'b'.repeat(64) } } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await pinsCommand([...args, '--url', url, '--token', 'admin-token-0123456789'], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

it('a pin the listing shows unchanged is not accepted: nothing is posted', async () => {
  const r = await run('accept', 'up/lookup');
  assert.notEqual(r.code, 0, r.out);
  assert.match(r.err, /has not changed since it was pinned/);
  assert.deepEqual(posts, []);
});

it('a ref the listing does not have is "not pinned" (exit 3, as show), and nothing is posted', async () => {
  const r = await run('accept', 'up/other');
  assert.equal(r.code, 3, r.out);
  assert.match(r.err, /no tool "up\/other" is pinned/);
  assert.deepEqual(posts, []);
});
