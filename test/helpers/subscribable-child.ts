// What the tests of a legacy client's subscriptions on a stdio pass-through ask the subscribable children
// (subscribable-stdio.mjs, dual-era-subscribable-stdio.mjs): their tools answer JSON in their text, `subscribed`
// with the URIs the child holds now, and `touch_all` has it announce a change to each of them.

import assert from 'node:assert/strict';
import type { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';

/** The JSON a tool of the child answers with; fails the test when the call is an error. */
export async function childTool(client: V1Client, name: string): Promise<unknown> {
  const result = (await client.callTool({ name, arguments: {} })) as { content: Array<{ text: string }>; isError?: boolean };
  assert.ok(result.isError !== true, `${name}: ${result.content[0]?.text}`);
  return JSON.parse(result.content[0]!.text);
}

/**
 * The URIs the child holds, asked every 100 ms (at most 100 more times) until `settled` accepts them: a
 * reload's judgement runs after the reload returns, so the child lets go of a URI shortly after.
 */
export async function childSubscriptionsWhen(client: V1Client, settled: (held: string[]) => boolean): Promise<string[]> {
  let held = (await childTool(client, 'subscribed')) as string[];
  for (let i = 0; i < 100 && !settled(held); i++) {
    await new Promise((r) => setTimeout(r, 100));
    held = (await childTool(client, 'subscribed')) as string[];
  }
  return held;
}

/** Has the child announce its subscriptions every 100 ms (at most 100 times) until `heard()`. */
export async function touchAllUntil(client: V1Client, heard: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !heard(); i++) {
    await childTool(client, 'touch_all');
    await new Promise((r) => setTimeout(r, 100));
  }
}
