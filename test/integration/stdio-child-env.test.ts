// What of Gatehouse's own environment a stdio child sees (upstreams[].env, docs/configuration.md): PATH,
// HOME, USER, LOGNAME, SHELL, TERM, LANG, TMPDIR and NODE_OPTIONS, and nothing else, so Gatehouse's own
// secrets (an admin token, a store password, a cloud credential in its environment) never reach a server
// it runs (2025-11-25/basic/security_best_practices.mdx: a server gets the credentials meant for it, not
// the client's). What the child needs beyond that is set in `env`, and passed on through ${env:NAME}.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../helpers/gateway.js';
import { post, rpc, LEGACY_HEADERS } from '../helpers/http.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

const REPORT = fileURLToPath(new URL('../fixtures/upstreams/env-report-stdio.mjs', import.meta.url));
const gateways = gatewaysCheckedForLeakedChildren();

// Set in this process (Gatehouse's, in-process here) before the child is started; restored after.
const ADDED = { GATEHOUSE_ADMIN_TOKEN: 'admin-token-of-the-gateway-0123456789', AWS_SECRET_ACCESS_KEY: 'aws-secret-of-the-gateway', PYTHONPATH: '/opt/gateway-python' };
const saved = Object.fromEntries(Object.keys(ADDED).map((k) => [k, process.env[k]]));
Object.assign(process.env, ADDED);
after(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

for (const processes of ['perSession', 'shared'] as const) {
  test(`${processes}: a child inherits only the documented variables; Gatehouse's secrets stay out; env adds what it needs`, { timeout: 30_000 }, async () => {
    const gw = await startGateway({ upstreams: [{ name: 'report', command: [process.execPath, REPORT], era: 'legacy', processes, env: { SERVICE_TOKEN: 'given-to-the-child', PYTHONPATH: '/opt/child-python' } }] });
    gateways.push(gw);
    const init = await post(gw.url, rpc(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.equal(init.status, 200, init.text);
    const res = await post(gw.url, rpc(1, 'tools/call', { name: 'env' }), { ...LEGACY_HEADERS, 'mcp-session-id': String(init.headers['mcp-session-id']) });
    assert.equal(res.status, 200, res.text);
    const env = JSON.parse(res.json().result.content[0].text as string) as Record<string, string>;
    const allowed = new Set(['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'LANG', 'TMPDIR', 'NODE_OPTIONS', 'SERVICE_TOKEN', 'PYTHONPATH']);
    // Variables a process gets without being given them (the dynamic loader's, node's own) are not inherited.
    const unexpected = Object.keys(env).filter((k) => !allowed.has(k) && k in process.env && process.env[k] === env[k]);
    assert.deepEqual(unexpected, [], 'inherited from Gatehouse beyond the documented list');
    assert.equal(env.GATEHOUSE_ADMIN_TOKEN, undefined);
    assert.equal(env.AWS_SECRET_ACCESS_KEY, undefined);
    assert.equal(env.PATH, process.env.PATH);
    assert.equal(env.SERVICE_TOKEN, 'given-to-the-child');
    assert.equal(env.PYTHONPATH, '/opt/child-python', 'env wins over what Gatehouse has');
  });
}
