// store.path is relative to the directory a command runs in (docs/configuration.md), unlike ${file:...},
// which is relative to the config file. `gatehouse audit verify --config /etc/gatehouse/gatehouse.yaml`, run
// from a home directory against a gateway that runs in /var/lib/gatehouse, said only "no store at
// ./data/gatehouse.db", which reads as if the gateway had never written one. It now says where it looked
// and why there; an absolute path keeps the short message.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, runCli } from '../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-missing-store-'));
const config = join(dir, 'gatehouse.yaml');
writeFileSync(config, 'upstreams: [{ name: a, url: "http://127.0.0.1:3001/mcp" }]\nauth: { anonymous: true }\nstore: { path: ./no-such-data/gatehouse.db }\n');

describe('a relative store path with no store there', () => {
  for (const args of [['audit', 'verify'], ['budgets', 'show']]) {
    it(`${args.join(' ')} says where it looked, and that the path is taken from where the command runs`, async () => {
      const r = await runCli([...args, '--config', config], { env: { PATH: process.env.PATH } });
      assert.equal(r.code, 1);
      const looked = join(ROOT, 'no-such-data/gatehouse.db');
      assert.ok(r.stderr.includes(`error: no store at ./no-such-data/gatehouse.db (looked for at ${looked}: a relative store path is taken from the directory the command runs in; run it where the gateway runs, or give the file's absolute path)`), r.stderr);
    });
  }

  it('an absolute path keeps the short message', async () => {
    const r = await runCli(['audit', 'verify', '--store', join(dir, 'nope.db')], { env: { PATH: process.env.PATH } });
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `error: no store at ${join(dir, 'nope.db')}\n`);
  });
});
