// A replayed write answer in the era of the client asking (src/policy/idempotency-stage.ts replay): the same
// caller's key may be used first by a client of one era and retried by a client of the other. Until
// 3 December the stored answer went back as it was stored: a 2025 client's answer (no `resultType`) was
// refused by a 2026-07-28 client ("missing required resultType"), and a 2026-07-28 answer gave a 2025
// client `resultType` and the modern serverInfo `_meta`. Real SDK clients of both eras (v1 legacy, v2
// pinned to 2026-07-28), against upstreams of both eras, the answer checked as the SDK gave it and on the wire.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { startCountingUpstream, type CountingUpstream } from '../fixtures/upstreams/counting-writes.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { MODERN_VERSION } from '../helpers/matrix-clients.js';
import { waitFor } from '../helpers/otlp.js';

type Era = 'modern' | 'legacy';
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
const REPLAYED = 'dev.gatehouse/replayed';
const ups: Partial<Record<Era, CountingUpstream>> = {};
/** One gateway per upstream era, each with only that upstream. */
const gws: Partial<Record<Era, TestGateway>> = {};
let seq = 0;

before(async () => {
  for (const era of ['modern', 'legacy'] as const) {
    ups[era] = await startCountingUpstream(era);
    gws[era] = await startGateway({ upstreams: [{ name: 'up', url: ups[era].url, era }], idempotency: { requireKeys: true } });
  }
});
after(async () => {
  for (const era of ['modern', 'legacy'] as const) {
    await gws[era]?.close();
    await ups[era]?.close();
  }
});

interface Answer {
  /** The result as the SDK handed it over. */
  sdk: Record<string, unknown>;
  /** The result as it came over the wire (JSON body or SSE event). */
  wire: Record<string, unknown>;
}

/** A fetch that keeps the result of the tools/call answer as it came over the wire. */
function wireFetch(seen: Array<Record<string, unknown>>) {
  return async (url: string | URL, init?: RequestInit): Promise<Response> => {
    const res = await fetch(url, init);
    if (typeof init?.body === 'string' && init.body.includes('"tools/call"')) {
      const text = await res.clone().text();
      const json = text.trimStart().startsWith('{') ? [text] : text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5));
      for (const j of json) {
        const m = JSON.parse(j) as { result?: Record<string, unknown> };
        if (m.result !== undefined) seen.push(m.result);
      }
    }
    return res;
  };
}

/** tools/call `tool` {item, ms} with an idempotency key, through a real SDK client of `era`. */
async function callAs(era: Era, url: string, tool: string, args: Record<string, unknown>, key: string): Promise<Answer> {
  const wire: Array<Record<string, unknown>> = [];
  const params = { name: tool, arguments: args, _meta: { idempotencyKey: key } };
  let sdk: Record<string, unknown>;
  if (era === 'legacy') {
    const client = new V1Client({ name: 'idempotency-eras-v1', version: '1.0.0' });
    await client.connect(new V1Transport(new URL(url), { fetch: wireFetch(wire) }));
    try {
      sdk = (await client.callTool(params, undefined, { timeout: 10_000 })) as Record<string, unknown>;
    } finally {
      await client.close();
    }
  } else {
    const client = new V2Client({ name: 'idempotency-eras-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN_VERSION } } });
    await client.connect(new V2Transport(new URL(url), { fetch: wireFetch(wire) }));
    try {
      sdk = (await client.callTool(params, { timeout: 10_000 })) as Record<string, unknown>;
    } finally {
      await client.close();
    }
  }
  assert.equal(wire.length, 1, 'one answer to the call on the wire');
  return { sdk, wire: wire[0]! };
}

/** The answer has the shape of `era`: 2026-07-28 results carry resultType; 2025 ones none of the modern fields. */
function assertEra(era: Era, a: Answer): void {
  const meta = (a.wire._meta ?? {}) as Record<string, unknown>;
  if (era === 'modern') {
    assert.equal(a.wire.resultType, 'complete', JSON.stringify(a.wire));
  } else {
    assert.equal('resultType' in a.wire, false, JSON.stringify(a.wire));
    assert.equal(SERVER_INFO in meta, false, JSON.stringify(a.wire));
    assert.equal('resultType' in a.sdk, false, 'nor in what the v1 SDK hands over');
  }
}

describe('a replayed write answer has the era of the client asking', () => {
  for (const upstream of ['modern', 'legacy'] as const) {
    for (const [first, second] of [['legacy', 'modern'], ['modern', 'legacy']] as const) {
      test(`${upstream} upstream: first by a ${first} client, retried by a ${second} client`, async () => {
        const key = `key-eras-${++seq}-${Date.now()}`;
        const item = `eras-${seq}`;
        const url = gws[upstream]!.url;
        const a = await callAs(first, url, 'record', { item }, key);
        assertEra(first, a);
        const b = await callAs(second, url, 'record', { item }, key);
        assertEra(second, b);
        assert.equal((b.sdk._meta as Record<string, unknown> | undefined)?.[REPLAYED], true, 'the retry was the replay');
        assert.deepEqual(b.sdk.content, a.sdk.content);
        assert.equal(ups[upstream]!.timesExecuted(key), 1);
      });
    }
  }

  test('a duplicate that waited for the first call (of the other era) gets its answer in its own era', async () => {
    const key = `key-eras-wait-${++seq}-${Date.now()}`;
    const item = `eras-wait-${seq}`;
    const url = gws.legacy!.url;
    const first = callAs('legacy', url, 'record_slowly', { item, ms: 600 }, key);
    // The first holds the key, and is running, once the upstream has it.
    await waitFor('the first call to reach the upstream', () => ups.legacy!.received.find((body) => body.includes(key)));
    const [a, b] = await Promise.all([first, callAs('modern', url, 'record_slowly', { item, ms: 600 }, key)]);
    assertEra('legacy', a);
    assertEra('modern', b);
    assert.equal((b.sdk._meta as Record<string, unknown> | undefined)?.[REPLAYED], true);
    assert.deepEqual(b.sdk.content, a.sdk.content);
    assert.equal(ups.legacy!.timesExecuted(key), 1);
  });
});
