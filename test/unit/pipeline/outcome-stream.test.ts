// pipeOutcome writing an upstream's relayed bytes into a call stream that has already begun (the approval
// stage's, on the legacy client's stream): the reader leaving must end the relay, whatever the upstream does.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { GatewayError } from '../../../src/errors.js';
import { CallStream } from '../../../src/pipeline/call-stream.js';
import type { CallContext } from '../../../src/pipeline/context.js';
import type { Outcome } from '../../../src/pipeline/outcome.js';
import { pipeOutcome } from '../../../src/pipeline/outcome-stream.js';
import { RelayBody } from '../../../src/pipeline/relay-body.js';

// A relay's bytes are written without the call's context (only refusals render through it).
const NO_CONTEXT = {} as CallContext;

function relay(contentType: string, upstream: Readable): Outcome {
  return {
    kind: 'relay', status: 200, headers: { 'content-type': contentType }, body: RelayBody.fromReadable(upstream), requestId: 1, upstream: 'up',
    failureOf: (err) => new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `broken: ${String(err)}`, 'up'),
  };
}

for (const [kind, contentType, first] of [
  ['an event stream', 'text/event-stream', 'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n'],
  ['a JSON answer', 'application/json', '{"jsonrpc":"2.0","id":1,"res'],
] as const) {
  test(`a relay of ${kind} that stalls: the reader leaving ends the relay and stops the upstream`, async () => {
    // Part of the answer, then nothing: the upstream holds the rest until someone stops it.
    const upstream = new Readable({ read() {} });
    upstream.push(Buffer.from(first));
    const out = new CallStream({ requestId: 1, mode: 'call', acceptsSse: true });
    const piping = pipeOutcome(relay(contentType, upstream), out, NO_CONTEXT);
    // The reader leaves once the relay has begun (the first bytes read).
    await new Promise((r) => setImmediate(r));
    out.cancel();
    // Until 5 December the body was dropped under its view's reader, and this never settled.
    await piping;
    assert.equal(upstream.destroyed, true);
    assert.equal(out.closed, true);
  });
}
