// declaresInput (src/upstream/bridge-modern-client.ts): whether a modern client's declared capabilities
// cover a legacy server's request for input, down to its mode (2026-07-28 mrtr.mdx §Server Requirements 6;
// 2025-11-25 client/elicitation.mdx §Capabilities: an empty elicitation object declares form mode only).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { declaresInput } from '../../../src/upstream/bridge-modern-client.js';

test('elicitation: form unless a mode says otherwise; an empty object is form only; url needs url', () => {
  const form = { message: 'name?', requestedSchema: { type: 'object' } };
  const url = { mode: 'url', message: 'sign in', url: 'https://example.com', elicitationId: 'e' };
  assert.equal(declaresInput({ elicitation: {} }, 'elicitation/create', form), true);
  assert.equal(declaresInput({ elicitation: {} }, 'elicitation/create', url), false);
  assert.equal(declaresInput({ elicitation: { form: {} } }, 'elicitation/create', { ...form, mode: 'form' }), true);
  assert.equal(declaresInput({ elicitation: { url: {} } }, 'elicitation/create', form), false);
  assert.equal(declaresInput({ elicitation: { url: {} } }, 'elicitation/create', url), true);
  assert.equal(declaresInput({ elicitation: { form: {}, url: {} } }, 'elicitation/create', url), true);
  assert.equal(declaresInput({ elicitation: { form: {} } }, 'elicitation/create', { ...form, mode: 'other' }), false);
  assert.equal(declaresInput({}, 'elicitation/create', form), false);
});

test('sampling with tools needs sampling.tools; roots need roots; anything else is never declared', () => {
  const sample = { messages: [], maxTokens: 1 };
  assert.equal(declaresInput({ sampling: {} }, 'sampling/createMessage', sample), true);
  assert.equal(declaresInput({ sampling: {} }, 'sampling/createMessage', { ...sample, tools: [] }), false);
  assert.equal(declaresInput({ sampling: { tools: {} } }, 'sampling/createMessage', { ...sample, tools: [] }), true);
  assert.equal(declaresInput({ roots: {} }, 'roots/list', undefined), true);
  assert.equal(declaresInput({ roots: true }, 'roots/list', undefined), false);
  assert.equal(declaresInput({ elicitation: {} }, 'vendor/ask', {}), false);
});
