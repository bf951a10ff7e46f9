// An error that is not a GatewayError (a fault in Gatehouse, a library's surprise) must not reach the
// client in its own words: they can quote internals (a path, an address, `Maximum call stack size
// exceeded`: a catalog list once answered a 502 quoting exactly that, before 51333c5). The client gets the
// failure code with a message that says only that something unexpected happened, and the call id; the error
// itself goes to the log beside that call id (src/errors.ts asGatewayError).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CatalogUpstream } from '../../../src/catalog/catalog-upstream.js';
import { compileResolveStage } from '../../../src/catalog/resolve-stage.js';
import type { Catalog } from '../../../src/catalog/catalog.js';
import { asGatewayError, GatewayError, toWire } from '../../../src/errors.js';
import { createLogger } from '../../../src/log/logger.js';
import { NEVER_CANCELLED } from '../../../src/pipeline/cancellation.js';
import type { CallContext } from '../../../src/pipeline/context.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';
import type { Upstream } from '../../../src/pipeline/ports.js';

const INTERNAL = 'ENOENT: no such file or directory, open /srv/gatehouse/internal/secret-path.json';

function capture(): { log: ReturnType<typeof createLogger>; lines: Array<Record<string, any>> } {
  const lines: Array<Record<string, any>> = [];
  return { log: createLogger('info', (line) => void lines.push(JSON.parse(line))), lines };
}

function context(over: Record<string, unknown>): CallContext {
  return { callId: 'call-42', era: 'modern', kind: 'request', acceptsSse: false, cancel: NEVER_CANCELLED, headers: {}, principal: { subject: 'anonymous', scopes: [], groups: [], via: 'anonymous' }, ...over } as unknown as CallContext;
}

/** The client's JSON-RPC error for an outcome: a refusal's, or the failure a stream ends with. */
async function clientError(outcome: Outcome, ctx: CallContext): Promise<{ code: number; message: string; data: Record<string, unknown> }> {
  if (outcome.kind === 'refused') return toWire(outcome.refusal, { era: ctx.era, id: 1, callId: ctx.callId }).body.error as never;
  assert.equal(outcome.kind, 'stream');
  const items = [];
  for await (const item of (outcome as { stream: { read(): AsyncIterable<unknown> } }).stream.read()) items.push(item);
  const last = items.at(-1) as { failure?: GatewayError };
  assert.ok(last.failure instanceof GatewayError, JSON.stringify(items));
  return toWire({ kind: 'failure', error: last.failure }, { era: ctx.era, id: 1, callId: ctx.callId }).body.error as never;
}

function assertToldOnlyThat(error: { code: number; message: string; data: Record<string, unknown> }, lines: Array<Record<string, any>>, code: string): void {
  assert.equal(error.code, -32603);
  assert.equal(error.data.code, code);
  assert.equal(error.data.callId, 'call-42');
  assert.doesNotMatch(error.message, /ENOENT|secret-path|srv/, `the client's message quotes the error: ${error.message}`);
  assert.match(error.message, /unexpected error in Gatehouse/);
  const logged = lines.find((l) => l.msg === 'an unexpected error ended a call; the client was told only that');
  assert.ok(logged, JSON.stringify(lines));
  assert.equal(logged.level, 'error');
  assert.equal(logged.callId, 'call-42');
  assert.match(JSON.stringify(logged.err), /secret-path/, 'the log keeps what the client was not told');
}

test('asGatewayError: a GatewayError passes as it is, unlogged; anything else is generic for the client and whole in the log', () => {
  const { log, lines } = capture();
  const own = new GatewayError('GW_ERR_UPSTREAM_TIMEOUT', 'Upstream "a" did not answer in time', 'a');
  assert.equal(asGatewayError(own, 'GW_ERR_UPSTREAM_BAD_RESPONSE', log, { callId: 'call-42' }), own);
  assert.equal(lines.length, 0);
  const wrapped = asGatewayError(new RangeError(INTERNAL), 'GW_ERR_UPSTREAM_EXITED', log, { upstream: 'files', callId: 'call-42' });
  assert.equal(wrapped.code, 'GW_ERR_UPSTREAM_EXITED');
  assert.equal(wrapped.upstream, 'files');
  assert.equal(wrapped.message, 'Upstream "files" could not be served: an unexpected error in Gatehouse (its log has the details)');
  assert.ok(wrapped.cause instanceof RangeError);
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.upstream, 'files');
  assert.equal(lines[0]!.err.name, 'RangeError');
  assert.equal(lines[0]!.err.message, INTERNAL);
});

test('the catalog: a member failing with an unexpected error, for a legacy client and a modern one', async () => {
  const member = { name: 'm', transport: 'http', modernFace: async () => { throw new TypeError(INTERNAL); } } as unknown as Upstream;
  for (const era of ['legacy', 'modern'] as const) {
    const { log, lines } = capture();
    const catalog = new CatalogUpstream([member], new Map(), 'auto', () => ({ handle: async () => assert.fail('the bridge is not reached'), close: async () => {}, rejudgeSubscriptions: async () => assert.fail('the bridge is not reached') }), log);
    const ctx = context({ era, method: 'server/discover', message: { jsonrpc: '2.0', id: 1, method: 'server/discover', params: {} } });
    const outcome = await catalog.handle(ctx);
    assertToldOnlyThat(await clientError(outcome, ctx), lines, era === 'legacy' ? 'GW_ERR_UPSTREAM_UNREACHABLE' : 'GW_ERR_UPSTREAM_BAD_RESPONSE');
  }
});

test('the resolve stage: a catalog failing with an unexpected error while it resolves a name', async () => {
  const { log, lines } = capture();
  const catalog = { known: () => undefined, resolve: async () => { throw new Error(INTERNAL); } } as unknown as Catalog;
  const stage = compileResolveStage({ catalog, passThrough: () => undefined, log });
  const ctx = context({ method: 'tools/call', message: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {} } } });
  const outcome = await stage.run(ctx, async () => assert.fail('the call goes no further'));
  assertToldOnlyThat(await clientError(outcome, ctx), lines, 'GW_ERR_UPSTREAM_UNREACHABLE');
});
