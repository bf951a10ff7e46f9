// accepts(): the media-range check of the front door (2025-11-25/basic/transports.mdx §Sending Messages:
// the client's Accept lists application/json and text/event-stream). Parsed ranges are remembered per
// header value, so the answers must not depend on what was asked before.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accepts } from '../../../src/protocol/front-door.js';

test('exact types, wildcards, parameters and case', () => {
  const both = 'application/json, text/event-stream';
  for (let i = 0; i < 3; i++) {
    assert.equal(accepts(both, 'application/json'), true);
    assert.equal(accepts(both, 'text/event-stream'), true);
    assert.equal(accepts(both, 'text/html'), false);
  }
  assert.equal(accepts('*/*', 'text/event-stream'), true);
  assert.equal(accepts('text/*;q=0.5', 'text/event-stream'), true);
  assert.equal(accepts('text/*;q=0.5', 'application/json'), false);
  assert.equal(accepts('Application/JSON; charset=utf-8', 'application/json'), true);
  assert.equal(accepts('application/jsonx', 'application/json'), false);
  assert.equal(accepts('', 'application/json'), false);
  assert.equal(accepts(undefined, 'application/json'), false);
  // A long header is answered the same, only not remembered.
  const long = `${'x/y;q=1, '.repeat(60)}application/json`;
  assert.equal(accepts(long, 'application/json'), true);
  assert.equal(accepts(long, 'text/event-stream'), false);
});

test('many distinct Accept values: the memory stays bounded and the answers stay right', () => {
  for (let i = 0; i < 2000; i++) assert.equal(accepts(`application/x-${i}, text/event-stream`, 'text/event-stream'), true);
  assert.equal(accepts('application/x-5, text/event-stream', 'application/json'), false);
});
