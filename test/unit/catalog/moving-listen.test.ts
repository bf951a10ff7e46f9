// A modern client's listen taken to a reload's new catalog (catalog/moving-listen.ts): the new catalog's
// listen is opened before the old one is stopped, the client is told each list it asked about changed, and
// a new catalog that honours less than the client's acknowledgment promised ends the listen with its
// completion result (2026-07-28/basic/patterns/subscriptions.mdx §Acknowledgment, §Graceful Closure).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MovingListen } from '../../../src/catalog/moving-listen.js';
import { OpenListens } from '../../../src/catalog/open-listens.js';
import type { Catalog } from '../../../src/catalog/catalog.js';
import { Cancellation, signalOf } from '../../../src/pipeline/cancellation.js';
import type { Principal } from '../../../src/pipeline/principal.js';
import type { JsonRpcMessage } from '../../../src/protocol/jsonrpc.js';
import type { UpstreamReply } from '../../../src/pipeline/ports.js';

const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const principal = { subject: 'anonymous' } as unknown as Principal;

/** A catalog whose listens acknowledge `honours`, relay what `say` is given, and end when their cancel fires. */
function fakeCatalog(honours: Record<string, unknown>, name = 'catalog', events: string[] = []) {
  const listens: Array<{ say(m: JsonRpcMessage): void; stopped: () => boolean }> = [];
  const catalog = {
    async post(message: JsonRpcMessage, _headers: Record<string, string>, cancel: Cancellation): Promise<UpstreamReply> {
      events.push(`${name} posted`);
      const signal = signalOf(cancel)!;
      const queue: JsonRpcMessage[] = [];
      let wake: (() => void) | undefined;
      signal.addEventListener('abort', () => {
        events.push(`${name} stopped`);
        wake?.();
      });
      listens.push({ say: (m) => (queue.push(m), wake?.()), stopped: () => signal.aborted });
      const id = (message as { id: number }).id;
      async function* messages(): AsyncGenerator<JsonRpcMessage, void, void> {
        yield { jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: honours } };
        for (let i = 0; i < 100; i++) {
          while (queue.length > 0) yield queue.shift()!;
          if (signal.aborted) break;
          await new Promise<void>((r) => (wake = r));
        }
        yield { jsonrpc: '2.0', id, result: { resultType: 'complete' } };
      }
      return { status: 200, headers: {}, messages: messages() };
    },
  } as unknown as Catalog;
  return { catalog, events, listens };
}

const listenRequest = (notifications: Record<string, unknown>) => ({ jsonrpc: '2.0' as const, id: 7, method: 'subscriptions/listen', params: { notifications } });
const methodOf = (m: JsonRpcMessage | void): unknown => (m as { method?: unknown } | undefined)?.method;

test('a moved listen opens on the new catalog first, is told its lists changed, and relays the new catalog', async () => {
  const events: string[] = [];
  const old = fakeCatalog({ toolsListChanged: true }, 'old', events);
  const next = fakeCatalog({ toolsListChanged: true }, 'new', events);
  const stop = new Cancellation();
  const listen = new MovingListen(principal, {}, 0, old.catalog, listenRequest({ toolsListChanged: true }), {}, stop, new OpenListens());
  const messages = listen.messages();
  assert.equal(methodOf((await messages.next()).value), 'notifications/subscriptions/acknowledged');
  assert.equal(listen.moveTo(next.catalog), true);
  assert.equal(listen.moveTo(next.catalog), false, 'already there');
  const told = (await messages.next()).value as unknown as { method: string; params: { _meta: Record<string, unknown> } };
  assert.equal(told.method, 'notifications/tools/list_changed');
  assert.equal(told.params._meta[SUBSCRIPTION_ID], 7, 'under the client\'s subscription id');
  assert.deepEqual(events, ['old posted', 'new posted', 'old stopped'], 'the old catalog\'s listen is stopped once the new one is open');
  assert.ok(next.listens[0] && !next.listens[0].stopped(), 'the new one goes on');
  next.listens[0]!.say({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { from: 'next' } });
  assert.deepEqual(((await messages.next()).value as { params: unknown }).params, { from: 'next' });
  stop.cancel();
  const end = (await messages.next()).value as { id?: unknown };
  assert.equal(end.id, 7, 'the client\'s end ends the new catalog\'s listen with its result');
  assert.equal((await messages.next()).done, true);
});

test('a new catalog that honours less than the acknowledgment promised ends the listen gracefully', async () => {
  const old = fakeCatalog({ toolsListChanged: true, resourceSubscriptions: ['test://a'] });
  const next = fakeCatalog({ toolsListChanged: true });
  const listen = new MovingListen(principal, {}, 0, old.catalog, listenRequest({ toolsListChanged: true, resourceSubscriptions: ['test://a'] }), {}, new Cancellation(), new OpenListens());
  const messages = listen.messages();
  await messages.next();
  assert.deepEqual(listen.uris, ['test://a']);
  listen.moveTo(next.catalog);
  const end = (await messages.next()).value as { id?: unknown; result?: { resultType?: unknown } };
  assert.equal(end.id, 7);
  assert.equal(end.result?.resultType, 'complete');
  assert.equal((await messages.next()).done, true);
  assert.ok(old.listens[0]!.stopped() && next.listens[0]!.stopped(), 'neither catalog keeps a listen');
});
