// A legacy (bridged) member is watched for list changes, and its lists are kept until it says they changed
// (README §Several upstreams). A list read while the member said so is answered, but not kept: read
// before the change, it is stale when it arrives. Until 3 December it was kept with no end (its read began
// before the drop and was stored after it), and the change the member announced was never seen.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Catalog } from '../../../src/catalog/catalog.js';
import { createLogger } from '../../../src/log/logger.js';

// The member's face, held to what the catalog reads of it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Msg = any;
test('a list read across an announced change is answered but not kept; the next list is read afresh', async () => {
  let version = 1;
  let notify: ((m: Msg) => void) | undefined;
  let holdNext: Promise<void> | undefined;
  let lists = 0;
  const face = {
    capabilities: { tools: { listChanged: true } },
    http: false,
    bridged: true,
    messages: {
      upstream: 'leg',
      post: async (msg: Msg) => {
        if (msg.method === 'subscriptions/listen') {
          const queue: Msg[] = [{ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { toolsListChanged: true } } }];
          let wake: (() => void) | undefined;
          notify = (m) => { queue.push(m); wake?.(); };
          return { status: 200, headers: {}, messages: (async function* () { for (;;) { while (queue.length) yield queue.shift(); await new Promise<void>((r) => (wake = r)); } })() };
        }
        lists++;
        const answer = { jsonrpc: '2.0', id: msg.id, result: { tools: [{ name: `tool_v${version}`, inputSchema: { type: 'object' } }] } };
        const hold = holdNext; holdNext = undefined;
        if (hold) await hold; // the answer was made before the change, and arrives after it
        return { status: 200, headers: {}, messages: (async function* () { yield answer; })() };
      },
      openGet: async () => null, deleteSession: async () => {},
    },
  };
  const member = { name: 'leg', modernFace: async () => face } as any;
  const catalog = new Catalog([member], new Map(), 'auto', createLogger('warn', () => {}));
  const names = async () => {
    const reply = await catalog.post({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } } }, {});
    for await (const m of reply.messages) return ((m as any).result.tools as any[]).map((t) => t.name);
  };
  assert.deepEqual(await names(), ['tool_v1']); // the first list starts the watcher
  for (let i = 0; i < 50 && notify === undefined; i++) await new Promise((r) => setTimeout(r, 10));
  // Change 1: the watcher hears it, the cache is dropped.
  version = 2; notify!({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  await new Promise((r) => setTimeout(r, 20));
  let release!: () => void; holdNext = new Promise<void>((r) => (release = r));
  const inFlight = names(); // reads v2 (made now)...
  await new Promise((r) => setTimeout(r, 20));
  version = 3; notify!({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }); // ...the member changes again and says so
  await new Promise((r) => setTimeout(r, 20));
  release();
  assert.deepEqual(await inFlight, ['tool_v2']);
  await new Promise((r) => setTimeout(r, 20));
  const later = [] as unknown[];
  for (let i = 0; i < 3; i++) { later.push(await names()); await new Promise((r) => setTimeout(r, 50)); }
  catalog.close();
  assert.deepEqual(later, [['tool_v3'], ['tool_v3'], ['tool_v3']]);
});
