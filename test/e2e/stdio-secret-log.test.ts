// A stdio upstream's credentials reach it through its env (or an option of its command line), and its stderr
// is logged: a server that prints its settings at start-up, or a usage error quoting its argv, put them in the
// log. collectSecrets took a stdio env value only when its name looked like a credential (…TOKEN, …KEY), so a
// value read through ${env:...} under another name (SERVICE_CRED, GITHUB_PAT) was logged as it was, and the
// command line's values not at all. Now every stdio env value the config reads through ${env:...} or
// ${file:...} is scrubbed, and so is the value of a credential-named option (--api-key V, --token=V) and a
// URL's password among the arguments. A literal env value under an ordinary name, and other arguments (paths,
// hosts), are left as they are. Through `gatehouse serve --config` and through a reload of the file.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { serveCli, until } from '../helpers/cli.js';
import { post, rpc } from '../helpers/http.js';

const CHILD = fileURLToPath(new URL('../fixtures/upstreams/stderr-env-stdio.mjs', import.meta.url));
const fresh = (label: string): string => `${label}-${randomBytes(12).toString('hex')}`;

test('stdio env values read through ${env:}/${file:} and credential options are scrubbed from the logged stderr, at start and after a reload', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-stdio-secrets-'));
  const file = join(dir, 'gatehouse.yaml');
  const secrets = { SVC_CRED: fresh('svc-cred'), SVC_API_KEY: fresh('svc-apikey'), FILE_CRED: fresh('file-cred'), DB_PASSWORD_ONLY: fresh('dbpw'), NEXT_CRED: fresh('next-cred') };
  writeFileSync(join(dir, 'cred.txt'), `${secrets.FILE_CRED}\n`);
  const dataDir = join(dir, 'data-directory');
  const write = (cred: string, marker: string): void =>
    writeFileSync(file, JSON.stringify({
      upstreams: [{
        name: 'svc',
        command: [process.execPath, CHILD, '--api-key', '${env:SVC_API_KEY}', `--db=postgres://app:\${env:DB_PASSWORD_ONLY}@127.0.0.1/app`, '${env:DATA_DIR}', marker],
        env: { SERVICE_CRED: cred, MODE: 'plain-literal-mode' },
      }],
      auth: { anonymous: true },
      store: { kind: 'sqlite', path: join(dir, 'state.db') },
    }));
  write('${env:SVC_CRED}-${file:cred.txt}', 'first');
  const gw = await serveCli(['--config', file, '--port', '0'], { configStore: true, env: { ...process.env, ...secrets, DATA_DIR: dataDir } });
  try {
    const stderrLine = (marker: string): string | undefined => gw.stderr().split('\n').find((l) => l.includes('settings: argv=') && l.includes(marker));
    const initialize = (): Promise<unknown> => post(gw.url, rpc(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'secrets', version: '1' } }));
    await initialize();
    assert.ok(await until(() => stderrLine('first') !== undefined, 10_000), gw.stderr());
    const line = stderrLine('first')!;
    for (const [name, value] of Object.entries(secrets)) if (name !== 'NEXT_CRED') assert.ok(!line.includes(value), `${name} leaked: ${line}`);
    assert.match(line, /\[redacted\]/);
    // Not credentials: a literal value under an ordinary name, and a positional argument (a path).
    assert.ok(line.includes('plain-literal-mode'), line);
    assert.ok(line.includes(dataDir), line);

    // A reload that reads another variable: its value is scrubbed from then on too.
    write('${env:NEXT_CRED}', 'second');
    gw.child.kill('SIGHUP');
    assert.ok(await until(() => gw.stderr().includes('"msg":"config reloaded"'), 10_000), gw.stderr());
    await initialize();
    assert.ok(await until(() => stderrLine('second') !== undefined, 10_000), gw.stderr());
    const next = stderrLine('second')!;
    assert.ok(!next.includes(secrets.NEXT_CRED), `NEXT_CRED leaked: ${next}`);
    assert.ok(!gw.stderr().includes(secrets.NEXT_CRED) && !gw.stdout().includes(secrets.NEXT_CRED));
  } finally {
    await gw.stop();
  }
});
