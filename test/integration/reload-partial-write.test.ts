// A config file rewritten in place, in several writes (an editor without atomic save, a template tool, a
// program writing in 8 KiB pieces): a look that lands between two writes reads a prefix of the new file,
// and a prefix cut before the end of `policy` is often a valid config with its last rules missing. DESIGN.md
// §3: a valid new version replaces the old one; a prefix is no version anyone wrote. Until 4 December the
// watcher applied it at once, and a tool a rule hides was served to every caller until the next look (a
// second later, or never if the writer stopped). A change is now applied once two reads agree.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep } from '../fixtures/upstreams/fake-upstream.js';
import { startModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGatewayFromConfigFile } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a file caught between two writes is not applied as it stands: only the whole new file is, and the rule at its end holds throughout', async () => {
  const up = await startModernServer();
  cleanups.push(() => up.close());
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-partial-write-'));
  const file = join(dir, 'gatehouse.yaml');
  const text = (graceMs: number): string =>
    `listen: { port: 0 }\nupstreams: [{ name: up, url: "${up.url}" }]\nauth: { anonymous: true }\nidempotency: { requireKeys: false }\n` +
    `store: { kind: sqlite, path: ${JSON.stringify(join(dir, 'g.db'))} }\nshutdown: { graceMs: ${graceMs} }\n` +
    `policy:\n  rules:\n    - { id: no-adds, tools: [up/add], access: deny }\n    - { id: the-rest, tools: ["*"], access: allow }\n`;
  writeFileSync(file, text(100));
  const { gateway, url, logs } = await startGatewayFromConfigFile(file);
  cleanups.push(() => gateway.close());
  const toolNames = async (): Promise<string[]> => {
    // A stateless (2026-07-28) request: no session to lose when a reload builds the upstream anew.
    const request = modernRequest(1, 'tools/list');
    const answer = (await post(url, request.body, request.headers)).json();
    assert.ok(answer.result !== undefined, JSON.stringify(answer));
    return (answer.result.tools as Array<{ name: string }>).map((t) => t.name);
  };
  const before = await toolNames();
  assert.ok(before.includes("echo") && !before.includes("add"), `listed: ${JSON.stringify(before)}`);

  // The new version (another graceMs) is written in two steps; the first ends where `policy` begins.
  const next = text(200);
  writeFileSync(file, next.slice(0, next.indexOf('policy:')));
  const looking = gateway.checkConfigFile();
  await sleep(30);
  writeFileSync(file, next);
  await looking;
  // Whatever that look found, the next one sees the file as it now stands.
  await gateway.checkConfigFile();
  assert.deepEqual(gateway.reloads, { applied: 1, refused: 0 }, `one version applied, the whole one: ${JSON.stringify(logs.filter((l) => /reload/.test(String(l.msg))))}`);
  assert.deepEqual(await toolNames(), before, 'the rule at the end of the file holds');
  assert.equal(await gateway.checkConfigFile(), 'unchanged');
});
