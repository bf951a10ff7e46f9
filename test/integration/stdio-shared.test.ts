// stdio `processes: shared`: legacy clients multiplexed onto one child per declared capability set, ids and
// progress tokens remapped by the gateway (2026-07-28/basic/transports/stdio.mdx: one channel, many
// requests), with elicitation still reaching the right client.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startGateway } from '../helpers/gateway.js';
import { waitFor } from '../helpers/otlp.js';

const gw = await startGateway({
  upstreams: [{ name: 'everything', command: [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'], processes: 'shared' }],
});
after(() => gw.close());

/** Elicitations each client was shown, by client name. */
const shown = new Map<string, number>();

async function connect(name: string, answer: string): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => {
    shown.set(name, (shown.get(name) ?? 0) + 1);
    return { action: 'accept', content: { name: answer, check: true, confirmed: true } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  return client;
}

test('two legacy clients share one child, each gets its own answers, progress and elicitation', async () => {
  const [a, b] = await Promise.all([connect('client-a', 'Ada'), connect('client-b', 'Bob')]);
  try {
    const [ea, eb] = await Promise.all([
      a.callTool({ name: 'echo', arguments: { message: 'from a' } }),
      b.callTool({ name: 'echo', arguments: { message: 'from b' } }),
    ]);
    assert.match(JSON.stringify(ea.content), /from a/);
    assert.match(JSON.stringify(eb.content), /from b/);
    const progress: number[] = [];
    const long = await a.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } }, undefined, { onprogress: (p) => progress.push(p.progress) });
    assert.ok(progress.length >= 2, `progress arrived: ${progress.join(',')}`);
    assert.match(JSON.stringify(long.content), /completed/i);
    const elicited = await b.callTool({ name: 'trigger-elicitation-request', arguments: {} });
    assert.match(JSON.stringify(elicited.content), /Bob/);
    // Gatehouse lists the server for itself (are its tool names safe? where does each name go?) in
    // sessions of its own; the two clients, who declared the same capabilities, share one child session.
    const opened = gw.logs.filter((l) => l.msg === 'legacy upstream session opened for modern clients' && l.owner === 'caller');
    assert.equal(opened.length, 1, 'both clients declared the same capabilities: one shared child session');
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('an elicitation while another client has a call in flight is refused, never shown to the wrong client', async () => {
  // A stdio server's request names no call; with two in flight on one child Gatehouse cannot tell whose
  // it is, and guessing would show one caller's prompt to another.
  const [a, b] = await Promise.all([connect('client-c', 'Cy'), connect('client-d', 'Di')]);
  try {
    // In flight in the child once its first progress came (after 1 s of 2).
    let running = false;
    const long = a.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 2 } }, undefined, { onprogress: () => (running = true) });
    await waitFor('the long call to be running in the child', () => (running ? true : undefined));
    const elicited = await b.callTool({ name: 'trigger-elicitation-request', arguments: {} }).then(
      (r) => JSON.stringify(r),
      (err: unknown) => String(err),
    );
    await long;
    assert.equal(shown.get('client-c') ?? 0, 0, 'the other client never saw the prompt');
    assert.doesNotMatch(elicited, /Di/, 'no answer was invented for it either');
    assert.ok(gw.logs.some((l) => l.msg === 'stdio upstream request refused: its call cannot be told'));
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
