// `gatehouse audit|budgets|approvals|pins --config FILE` read one part of the config: the store, or the admin
// listener. Where an operator runs them, the upstreams' secrets (tokens, API keys) are often absent; before,
// any unset ${env:...} anywhere in the file failed the command. Now only a secret the command uses must be
// present, and its absence names the setting and the variable, never a value.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { adminTarget } from '../../../src/cli/admin-client.js';
import { auditCommand } from '../../../src/cli/audit.js';
import { budgetsCommand } from '../../../src/cli/budgets.js';
import type { CommandIO } from '../../../src/cli/io.js';
import { SqliteStore } from '../../../src/store/sqlite-store.js';

let dir: string;
let storePath: string;
const ADMIN_TOKEN = 'admin-token-' + 'a'.repeat(24);

/** A config whose upstreams need secrets this box does not have; `store` and `admin` as given. */
function config(name: string, store: string, admin: string): string {
  const path = join(dir, name);
  writeFileSync(path, [
    'upstreams:',
    '  - name: crm',
    '    url: https://crm.example.com/mcp',
    '    headers: { Authorization: "Bearer ${env:CRM_TOKEN}" }',
    '  - name: files',
    '    command: [node, server.js]',
    '    env: { FILES_API_KEY: "${file:secrets/files-key}" }',
    'auth: { anonymous: true }',
    store,
    admin,
    '',
  ].join('\n'));
  return path;
}

function io(env: NodeJS.ProcessEnv): CommandIO & { outText(): string; errText(): string } {
  const out: string[] = [];
  const err: string[] = [];
  return { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env, outText: () => out.join(''), errText: () => err.join('') };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-secrets-'));
  storePath = join(dir, 'gatehouse.db');
  const store = new SqliteStore(storePath);
  await store.appendAudit({ time: new Date().toISOString(), callId: 'c1', runId: 'r1', subject: 'alice', toolRef: 'crm/search', tool: 'search', upstream: 'crm', method: 'tools/call', outcome: 'ok', latencyMs: 1 });
  await store.close();
});

describe('audit and budgets need only the store', () => {
  it('run without the upstreams\' secrets', async () => {
    const file = config('plain.yaml', `store: { kind: sqlite, path: "${storePath}" }`, 'admin: { enabled: false }');
    const a = io({});
    assert.equal(await auditCommand(['verify', '--config', file], a), 0, a.errText());
    assert.match(a.outText(), /audit chain ok: 1 records/);
    const b = io({});
    assert.equal(await budgetsCommand(['show', '--config', file], b), 0, b.errText());
  });

  it('refuse with the setting and the variable when a secret of the store is absent', async () => {
    const file = config('store-secret.yaml', 'store: { kind: sqlite, path: "${env:GATEHOUSE_STORE_PATH}" }', 'admin: { enabled: false }');
    for (const run of [(x: CommandIO) => auditCommand(['export', '--config', file], x), (x: CommandIO) => budgetsCommand(['show', '--config', file], x)]) {
      const x = io({ CRM_TOKEN: 'crm-secret-value-123456' });
      assert.equal(await run(x), 1, x.outText());
      assert.match(x.errText(), /store-secret\.yaml:\d+:\d+ store\.path: environment variable "GATEHOUSE_STORE_PATH" is not set; gatehouse (audit|budgets) needs it/);
      // Only the needed one is named; the upstreams' absent secrets are not this command's business.
      assert.doesNotMatch(x.errText(), /files-key|crm-secret-value/);
    }
    // With it set, the same file works.
    const ok = io({ GATEHOUSE_STORE_PATH: storePath });
    assert.equal(await auditCommand(['verify', '--config', file], ok), 0, ok.errText());
  });

  it('still refuse a config that is wrong in other ways', async () => {
    const file = config('broken.yaml', `store: { kind: sqlite, path: "${storePath}" }`, 'admin: { enabled: false, prot: 1 }');
    const x = io({});
    assert.equal(await auditCommand(['verify', '--config', file], x), 1);
    assert.match(x.errText(), /admin\.prot: unknown key/);
  });
});

describe('approvals and pins need only the admin listener', () => {
  const admin = 'admin: { enabled: true, host: 127.0.0.1, port: 9465, token: "${env:ADMIN_TOKEN_FOR_TEST}" }';

  it('find it without the upstreams\' secrets', async () => {
    const file = config('admin.yaml', `store: { kind: sqlite, path: "${storePath}" }`, admin);
    assert.deepEqual(await adminTarget({ config: file }, io({ ADMIN_TOKEN_FOR_TEST: ADMIN_TOKEN }), 'gatehouse approvals'), { url: 'http://127.0.0.1:9465', token: ADMIN_TOKEN });
    // The store is not theirs to need either.
    const storeless = config('admin-storeless.yaml', 'store: { kind: redis, url: "${env:REDIS_URL}" }', admin);
    assert.equal((await adminTarget({ config: storeless }, io({ ADMIN_TOKEN_FOR_TEST: ADMIN_TOKEN }), 'gatehouse pins')).token, ADMIN_TOKEN);
  });

  it('refuse naming admin.token when its secret is absent and no token is given; take --token instead', async () => {
    const file = config('admin-absent.yaml', `store: { kind: sqlite, path: "${storePath}" }`, admin);
    await assert.rejects(adminTarget({ config: file }, io({}), 'gatehouse approvals'), (err: Error) => {
      assert.match(err.message, /admin\.token: environment variable "ADMIN_TOKEN_FOR_TEST" is not set; gatehouse approvals needs it/);
      assert.doesNotMatch(err.message, /CRM_TOKEN|files-key/);
      return true;
    });
    assert.deepEqual(await adminTarget({ config: file, token: ADMIN_TOKEN }, io({}), 'gatehouse pins'), { url: 'http://127.0.0.1:9465', token: ADMIN_TOKEN });
  });
});
