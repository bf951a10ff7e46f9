// The catalog keeps a member's list for the ttlMs its server gave, per caller capability set (a legacy
// server may list by capability). The capability set is the caller's to choose, so what is kept is bounded:
// at most 1,000 lists, the least recently used forgotten, and a long capability set is keyed by its digest
// (src/catalog/catalog.ts). Until 3 December a caller sending a new set with each tools/list kept another
// list of every member for as long as the process lived, keyed by the set's whole JSON text.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Catalog } from '../../../src/catalog/catalog.js';
import { createLogger } from '../../../src/log/logger.js';
import type { ModernMember } from '../../../src/pipeline/ports.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../../../src/protocol/jsonrpc.js';

/** A modern member whose every list is one tool, kept for a minute; counts the lists it was asked for. */
function member(name: string): ModernMember & { lists: number } {
  const m = {
    name,
    lists: 0,
    modernFace: async () => ({
      capabilities: { tools: {} },
      http: false,
      messages: {
        upstream: name,
        post: async (msg: JsonRpcMessage) => {
          m.lists++;
          const id = (msg as JsonRpcRequest).id;
          return { status: 200, headers: {}, messages: (async function* () { yield { jsonrpc: '2.0' as const, id, result: { tools: [{ name: 'tool', inputSchema: { type: 'object' } }], ttlMs: 60_000 } }; })() };
        },
        openGet: async () => null,
        deleteSession: async () => {},
      },
    }),
  };
  return m as unknown as ModernMember & { lists: number };
}

function toolsList(capabilities: Record<string, unknown>): JsonRpcRequest {
  return { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': capabilities } } };
}

async function list(catalog: Catalog, capabilities: Record<string, unknown>): Promise<void> {
  const reply = await catalog.post(toolsList(capabilities), {});
  for await (const m of reply.messages) assert.ok('result' in m, JSON.stringify(m));
}

test('a list is kept per capability set: the same set again is answered from it', async () => {
  const a = member('a');
  const catalog = new Catalog([a], new Map(), 'auto', createLogger('warn', () => {}));
  await list(catalog, { experimental: { x: {} } });
  await list(catalog, { experimental: { x: {} } });
  assert.equal(a.lists, 1);
  await list(catalog, { experimental: { y: {} } });
  assert.equal(a.lists, 2);
});

test('1,500 capability sets of two members keep at most 1,000 lists', async () => {
  const a = member('a');
  const b = member('b');
  const catalog = new Catalog([a, b], new Map(), 'auto', createLogger('warn', () => {}));
  for (let i = 0; i < 1_500; i++) await list(catalog, { experimental: { [`set${i}`]: {} } });
  assert.equal(a.lists, 1_500);
  const kept = catalog.cachedListKeys().length;
  assert.ok(kept <= 1_000, `${kept} lists kept`);
  assert.ok(kept >= 900, `the cache still keeps lists (${kept})`);
  // The most recent set is still answered from what was kept.
  await list(catalog, { experimental: { set1499: {} } });
  assert.equal(a.lists, 1_500);
});

test('a capability set of 100 KB is keyed by its digest, not its text', async () => {
  const catalog = new Catalog([member('a')], new Map(), 'auto', createLogger('warn', () => {}));
  await list(catalog, { experimental: { big: { text: 'x'.repeat(100_000) } } });
  const keys = catalog.cachedListKeys();
  assert.equal(keys.length, 1);
  assert.ok(keys[0]!.length < 400, `a key of ${keys[0]!.length} characters`);
  assert.match(keys[0]!, /sha256:[0-9a-f]{64}$/);
});
