// A perSession stdio child that asks its client something (elicitation) mid-call: the call now waits on the
// client, whose user may take longer than the child's `timeouts.requestMs`, so that clock stops until the
// answer comes (as it does for `shared` children; src/upstream/README.md). Until 3 December a perSession
// call timed out while the user was still reading the question, and the child was told it was cancelled.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, post, rpc } from '../helpers/http.js';

const ASKER = fileURLToPath(new URL('../fixtures/upstreams/asker-stdio.mjs', import.meta.url));

test('perSession: a user answering after requestMs still gets the call answered', async () => {
  const gw = await startGateway({ upstreams: [{ name: 'asker', command: [process.execPath, ASKER], era: 'legacy', processes: 'perSession', timeouts: { requestMs: 1_000 } }] });
  try {
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 'input', version: '1' } }));
    const headers = { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) };
    await post(gw.url, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
    const res = await request(gw.url, { method: 'POST', headers, body: rpc(1, 'tools/call', { name: 'ask' }) });
    let text = '';
    let answered = false;
    for await (const chunk of res.body) {
      text += String(chunk);
      const line = text.split('\n').find((l) => l.includes('elicitation/create'));
      if (line !== undefined && !answered) {
        answered = true;
        const question = JSON.parse(line.replace(/^data: /, '')) as { id: string };
        // The user takes half again the child's request time.
        await new Promise((r) => setTimeout(r, 1_500));
        assert.equal((await post(gw.url, JSON.stringify({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { ok: true } } }), headers)).status, 202);
      }
    }
    assert.match(text, /user said \{\\"action\\":\\"accept\\"/);
    assert.doesNotMatch(text, /GW_ERR_UPSTREAM_TIMEOUT/);
  } finally {
    await gw.close();
  }
});
