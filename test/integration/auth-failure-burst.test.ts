// The failed-authentication limit holds for guesses sent together (README §Authentication: past
// `attempts` failures an address gets 429 "before any key is hashed or token verified"). Until 3 December
// each failure was counted only once the store had counted it, so guesses that arrived while earlier ones
// were being counted were all judged and answered: 200 pipelined on one connection got 200 answers of 401,
// and the real key sent after them was served.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Agent, request } from 'undici';
import { hashKey } from '../../src/auth/key-hash.js';
import { jsonResult, startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, rpc } from '../helpers/http.js';

const KEY = 'gh_the_real_key_0123456789abcdefghijklmnop';
const guess = (i: number) => `gh_guess_${i}_0123456789abcdefghijklmnopqrstu`;
let up: FakeUpstream;

before(async () => {
  up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, {}));
});
after(async () => {
  await up.close();
});

/** A gateway of its own per test: the limit is per address, and every test comes from 127.0.0.1. */
function gateway(): Promise<TestGateway> {
  return startGateway({ upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], auth: { apiKeys: [{ id: 'k', hash: hashKey(KEY), scopes: [] }], failureLimit: { attempts: 3, windowSeconds: 86_400 } } });
}

/** `n` requests written at once on one connection; their status codes in order. */
function pipelined(origin: string, n: number, keyOf: (i: number) => string): Promise<number[]> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    const statuses = () => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
    socket.on('connect', () => socket.write(Array.from({ length: n }, (_, i) => `GET /health HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${keyOf(i)}\r\n\r\n`).join('')));
    socket.on('data', (d) => {
      text += String(d);
      if (statuses().length >= n) {
        socket.destroy();
        resolve(statuses());
      }
    });
    socket.on('error', reject);
    setTimeout(() => {
      socket.destroy();
      resolve(statuses());
    }, 5_000).unref();
  });
}

test('pipelined guesses: at most `attempts` are judged; the rest, and the real key after them, get 429', async () => {
  const gw = await gateway();
  try {
    const statuses = await pipelined(gw.origin, 51, (i) => (i === 50 ? KEY : guess(i)));
    assert.ok(statuses.filter((s) => s === 401).length <= 3, statuses.join(' '));
    assert.equal(statuses.at(-1), 429);
  } finally {
    await gw.close();
  }
});

test('guesses on many connections at once: at most `attempts` are judged', async () => {
  const gw = await gateway();
  const dispatcher = new Agent({ connections: 50, pipelining: 1 });
  try {
    const send = (key: string) => request(gw.url, { method: 'POST', dispatcher, headers: { ...LEGACY_HEADERS, authorization: `Bearer ${key}` }, body: rpc(1, 'ping') }).then(async (r) => (await r.body.text(), r.statusCode));
    const statuses = await Promise.all(Array.from({ length: 50 }, (_, i) => send(guess(i))));
    assert.ok(statuses.filter((s) => s === 401).length <= 3, statuses.join(' '));
  } finally {
    await dispatcher.close();
    await gw.close();
  }
});
