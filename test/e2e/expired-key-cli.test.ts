// An API key whose `expires` is already past (2026-01-01 written for 2027-01-01, or a key left in the file
// after its end) is refused 401 to every request, and nothing said so: check-config printed "ok", doctor
// had no row for it, serve started without a word. The key ending is no reason to refuse the file (keys
// expire while a gateway runs, and a restart must not fail for it), so each of them now warns, naming the key.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { hashKey } from '../../src/auth/key-hash.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { runCli, serveCli, until } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-expired-key-'));
const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function config(url: string): string {
  const file = join(dir, `keys-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, [
    'listen: { port: 0 }',
    `store: { path: ${JSON.stringify(join(dir, 'g.db'))} }`,
    `upstreams: [{ name: app, url: "${url}" }]`,
    'auth:',
    '  apiKeys:',
    `    - { id: ci-bot, hash: "${hashKey('gh_' + 'a'.repeat(40))}", expires: 2026-01-01 }`,
    `    - { id: ops, hash: "${hashKey('gh_' + 'b'.repeat(40))}", expires: 2099-01-01 }`,
    '',
  ].join('\n'));
  return file;
}

describe('an API key already past its expires', () => {
  it('check-config says ok, with a warning naming the key and where it is', async () => {
    const file = config('http://127.0.0.1:3001/mcp');
    const r = await runCli(['check-config', file]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `${file}: ok\n`);
    assert.equal(r.stderr, `warning: ${file}:6:111 auth.apiKeys[0].expires: key "ci-bot" expired at 2026-01-01 (the end of that day, UTC): every request with it is refused 401; move expires or remove the key\n`);
  });

  it('doctor has a warn row for it, and exits 0', async () => {
    const file = config('http://127.0.0.1:3001/mcp');
    const r = await runCli(['doctor', '--config', file, '--json', '--skip', 'upstreams', '--skip', 'store', '--skip', 'ports']);
    assert.equal(r.code, 0, r.stdout);
    const rows = (JSON.parse(r.stdout) as { checks: Array<{ check: string; verdict: string; detail: string }> }).checks;
    const warned = rows.filter((c) => c.verdict === 'warn');
    assert.equal(warned.length, 1, r.stdout);
    assert.equal(warned[0]!.check, 'config');
    assert.match(warned[0]!.detail, /:6:111 auth\.apiKeys\[0\]\.expires: key "ci-bot" expired/);
  });

  it('serve starts, and logs the warning', async () => {
    const up = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { tools: [] }));
    cleanups.push(() => up.close());
    const gw = await serveCli(['--config', config(up.url)], { configStore: true });
    cleanups.push(() => gw.stop());
    assert.ok(await until(() => /"level":"warn".*"msg":"an API key has expired; every request with it is refused 401","keyId":"ci-bot","expires":"2026-01-01"/.test(gw.stderr())), gw.stderr());
    assert.doesNotMatch(gw.stderr(), /"keyId":"ops"/);
    assert.equal(await gw.stop(), 0);
  });
});
