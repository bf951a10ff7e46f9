// A reload refused for a problem beyond the schema (a ref naming no upstream, anonymous access off
// loopback...) logged it bare, `policy.rules[0].tools[0]: …`, where a schema finding of the same reload
// reads `gatehouse.yaml:6:5 upstreams[0].timeuots: …`: the operator editing a long file had to find the key
// by hand. It is located like the schema's, as check-config, serve and doctor locate it.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { serveCli, until } from '../helpers/cli.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

test('a reload refused by the semantic checks logs each problem as FILE:LINE:COL key.path: message', async () => {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-reload-located-')), 'gatehouse.yaml');
  const config = `listen: { port: 0 }\nupstreams: [{ name: up, url: "${up.url}" }]\nauth: { anonymous: true }\n`;
  writeFileSync(file, config);
  const gw = await serveCli(['--config', file]);
  cleanups.push(() => gw.stop());
  writeFileSync(file, `${config}policy:\n  rules:\n    - { id: all, access: allow, tools: ["upp/*"] }\n`);
  const refused = /"msg":"config reload refused; the running config stays","problems":\["([^"\\]|\\.)*"/;
  assert.ok(await until(() => refused.test(gw.stderr())), gw.stderr());
  assert.match(gw.stderr(), /"problems":\["gatehouse\.yaml:6:41 policy\.rules\[0\]\.tools\[0\]: \\"upp\/\*\\" names the upstream \\"upp\\"/);
  assert.equal(await gw.stop(), 0);
});
