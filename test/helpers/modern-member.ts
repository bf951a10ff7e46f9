// A fake 2026-07-28 upstream's plain answers, for tests about what it sends on its streams: what every
// request it does not stream gets, and a catalog of two such members in front of one gateway.

import type { ServerResponse } from 'node:http';
import { after, before } from 'node:test';
import type { FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway, type TestGateway } from './gateway.js';

/**
 * A complete JSON answer to `msg`: a list (`tools` for tools/list, empty for the others) that is not to be
 * cached (ttlMs 0), or an empty result.
 */
export function answerModernJson(res: ServerResponse, msg: { id: unknown; method: string }, tools: unknown[] = []): void {
  const key = msg.method === 'resources/templates/list' ? 'resourceTemplates' : msg.method.split('/')[0]!;
  const result = msg.method === 'tools/list' ? { tools, ttlMs: 0 } : msg.method.endsWith('/list') ? { [key]: [], ttlMs: 0 } : {};
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { resultType: 'complete', ...result } }));
}

export interface TwoMemberCatalog {
  /** The gateway in front of members `a` and `b` (set once the file's `before` has run). */
  readonly gw: TestGateway;
}

/**
 * Members `a` and `b` behind one gateway (the catalog), started before the file's tests and closed after
 * them: call at the top of a test file.
 */
export function twoMemberCatalog(startA: () => Promise<FakeUpstream>, startB: () => Promise<FakeUpstream>): TwoMemberCatalog {
  let a: FakeUpstream;
  let b: FakeUpstream;
  let gw: TestGateway | undefined;
  before(async () => {
    a = await startA();
    b = await startB();
    gw = await startGateway({ upstreams: [{ name: 'a', url: a.url }, { name: 'b', url: b.url }] });
  });
  after(async () => {
    await gw?.close();
    await a.close();
    await b.close();
  });
  return {
    get gw(): TestGateway {
      if (gw === undefined) throw new Error('the catalog is started in before()');
      return gw;
    },
  };
}
