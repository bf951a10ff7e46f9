// `listen` is read once at start (DESIGN.md §3 and STYLE.md §4: listen ports are static; a reload keeps
// the running listener). A reload is judged as it will run, with the running `listen`: so a file that moves
// listen.publicUrl and auth.oauth.audience together (both must name the resource tokens are minted for,
// 2025-11-25 basic/authorization.mdx §Token Handling, RFC 8707) is refused, since the new audience no longer
// equals the running publicUrl. The refusal said only "auth.oauth.audience: must equal listen.publicUrl
// ("<the old URL>")", which the new file plainly satisfies; the one line saying listen needs a restart was a
// separate warning. The refusal now names the listen keys that changed and says they need a restart, and why.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { validateConfigObject } from '../../src/config/load.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { startGateway } from '../helpers/gateway.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

const OLD = 'https://mcp.example.com/mcp';
const NEW = 'https://gateway.example.com/mcp';

test('a reload moving listen.publicUrl and auth.oauth.audience together is refused, saying listen.publicUrl needs a restart', async () => {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  const config = (url: string) => ({
    listen: { host: '127.0.0.1', port: 0, publicUrl: url },
    upstreams: [{ name: 'up', url: up.url, era: 'legacy' }],
    auth: { oauth: { issuer: 'https://auth.example.com', jwksUri: 'https://auth.example.com/jwks', audience: url } },
    idempotency: { requireKeys: false },
  });
  const gw = await startGateway(config(OLD));
  cleanups.push(() => gw.close());

  const problems = await gw.gateway.reload(validateConfigObject(config(NEW), 'test'));
  assert.deepEqual(gw.gateway.reloads, { applied: 0, refused: 1 });
  // The audience problem is still reported, and beside it why: the listen key that changed, and a restart.
  assert.ok(problems.some((p) => /^auth\.oauth\.audience: must equal listen\.publicUrl/.test(p)), problems.join('\n'));
  const restart = problems.find((p) => /^listen\.publicUrl\b/.test(p));
  assert.ok(restart, `a problem names listen.publicUrl: ${problems.join('\n')}`);
  assert.match(restart, /read only at start/);
  assert.match(restart, /restart/);
  assert.match(restart, new RegExp(`running listen\\.publicUrl is "${OLD.replace(/\./g, '\\.')}"`));
  const logged = gw.logs.find((l) => l.msg === 'config reload refused; the running config stays');
  assert.deepEqual(logged?.problems, problems, 'the log line says the same');
});

test('a refused reload names every listen key it changed; an unchanged listen adds nothing', async () => {
  const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
  cleanups.push(() => up.close());
  const base = { upstreams: [{ name: 'up', url: up.url, era: 'legacy' }], idempotency: { requireKeys: false } };
  const gw = await startGateway({ ...base, listen: { host: '127.0.0.1', port: 0, path: '/mcp' } });
  cleanups.push(() => gw.close());
  // No way to authenticate callers: refused whatever listen says.
  const unusable = (listen: Record<string, unknown>) => validateConfigObject({ ...base, listen: { host: '127.0.0.1', port: 0, ...listen }, auth: { anonymous: false } }, 'test');
  const moved = await gw.gateway.reload(unusable({ path: '/gateway', maxBodyBytes: 2048 }));
  assert.ok(moved.some((p) => /^auth: no way to authenticate callers/.test(p)), moved.join('\n'));
  assert.ok(moved.some((p) => /^listen\.maxBodyBytes and listen\.path\b.*restart/.test(p)), moved.join('\n'));
  const same = await gw.gateway.reload(unusable({ path: '/mcp' }));
  assert.ok(same.length > 0);
  assert.ok(!same.some((p) => /^listen\./.test(p)), same.join('\n'));
});
