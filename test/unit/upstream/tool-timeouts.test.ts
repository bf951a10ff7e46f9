// Limits per tool (upstreams[].timeouts.tools): 2026-07-28/basic/patterns/cancellation.mdx §Timeouts,
// "SDKs and other middleware SHOULD allow these timeouts to be configured on a per-request basis".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileToolTimeouts, toolCalled } from '../../../src/upstream/tool-timeouts.js';

test('an exact name wins over a glob; among globs the first written that matches; others have no limit of their own', () => {
  const limit = compileToolTimeouts({ 'search_*': 30_000, '*': 120_000, search_web: 5_000, 'ru?': 700 })!;
  assert.equal(limit('search_web'), 5_000, 'exact, though two globs match too');
  assert.equal(limit('search_docs'), 30_000, 'the first glob written');
  assert.equal(limit('build'), 120_000);
  assert.equal(limit('run'), 120_000, '`*` was written before `ru?`');
  const narrow = compileToolTimeouts({ 'ru?': 700, 'a.b': 50 })!;
  assert.equal(narrow('run'), 700);
  assert.equal(narrow('runs'), undefined, '? is one character');
  assert.equal(narrow('axb'), undefined, 'a dot is a dot');
  assert.equal(compileToolTimeouts({}), undefined, 'nothing configured: no matcher, nothing to look up per call');
  assert.equal(compileToolTimeouts(undefined), undefined);
});

test('the tool a message calls is its params.name, on tools/call only', () => {
  assert.equal(toolCalled({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'build', arguments: {} } }), 'build');
  assert.equal(toolCalled({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'build' } }), undefined);
  assert.equal(toolCalled({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 7 } }), undefined);
  assert.equal(toolCalled({ jsonrpc: '2.0', id: 1, method: 'tools/call' }), undefined);
});
