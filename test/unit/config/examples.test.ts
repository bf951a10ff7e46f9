// Every shipped config file must load, and docs/configuration.md must match what the schema generates now.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { ConfigError, loadConfigFile } from '../../../src/config/load.js';
import { isStdioUpstream } from '../../../src/config/types.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const configDir = `${root}config/`;
// The secrets config/gatehouse.example.yaml pulls from the environment.
const EXAMPLE_ENV = {
  CRM_CLIENT_SECRET: 'crm-secret-for-tests',
  OAUTH_CLIENT_SECRET: 'oauth-secret-for-tests',
  GATEHOUSE_ADMIN_TOKEN: 'admin-token-for-tests-0123456789',
};

describe('config/*.yaml', () => {
  const files = readdirSync(configDir).filter((f) => f.endsWith('.yaml')).sort();

  it('includes the three shipped files', () => {
    for (const f of ['gatehouse.default.yaml', 'gatehouse.example.yaml', 'gatehouse.minimal.yaml']) assert.ok(files.includes(f), f);
  });

  for (const file of files) {
    it(`${file} loads and points editors at the schema`, async () => {
      const config = await loadConfigFile(`${configDir}${file}`, EXAMPLE_ENV);
      assert.ok(config.upstreams.length > 0);
      assert.equal(readFileSync(`${configDir}${file}`, 'utf8').split('\n')[0], '# yaml-language-server: $schema=./gatehouse.schema.json');
      // What check-config and serve add to the schema: the file can be served by this build as it is.
      assert.deepEqual(unsupportedFeatures(config), []);
    });
  }

  it('the example names every secret it needs', async () => {
    await assert.rejects(loadConfigFile(`${configDir}gatehouse.example.yaml`, {}), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      for (const name of Object.keys(EXAMPLE_ENV)) assert.match(err.message, new RegExp(`environment variable "${name}" is not set`));
      assert.equal(err.issues.length, Object.keys(EXAMPLE_ENV).length);
      return true;
    });
  });

  it('the demo config starts the everything server from the repository root, anonymously on loopback', async () => {
    const config = await loadConfigFile(`${configDir}gatehouse.default.yaml`, {});
    assert.equal(config.listen.host, '127.0.0.1');
    assert.equal(config.auth.anonymous, true);
    const [upstream] = config.upstreams;
    assert.ok(upstream && isStdioUpstream(upstream));
    assert.ok(existsSync(`${root}${upstream.command[1]}`), `${upstream.command[1]} is missing; is server-everything installed?`);
  });
});

describe('docs/configuration.md', () => {
  it('is what scripts/gen-config-docs.mjs generates from the schema now', () => {
    const generated = execFileSync(process.execPath, [`${root}scripts/gen-config-docs.mjs`, '--stdout'], { encoding: 'utf8' });
    const committed = readFileSync(`${root}docs/configuration.md`, 'utf8');
    assert.equal(committed, generated, 'docs/configuration.md is stale: run node scripts/gen-config-docs.mjs');
  });

  it('tells each string\'s bound, and each list item\'s, so a refusal is no surprise', () => {
    const doc = readFileSync(`${root}docs/configuration.md`, 'utf8');
    assert.match(doc, /\| `host` \| string, at most 253 characters \|/);
    assert.match(doc, /\| `allowedHosts` \| list of string, at most 256 \(each at most 259 characters\) \|/);
    assert.match(doc, /\| `tls\.ca` \| string, at most 1 Mi characters \|/);
  });
});

describe('src/config/schema.generated.ts', () => {
  it('is what scripts/gen-config-types.mjs generates from the schema now: the config types have one source', async () => {
    const script = (await import(`${root}scripts/gen-config-types.mjs`)) as { generateConfigTypes(): Promise<string>; TARGET: string };
    const committed = readFileSync(script.TARGET, 'utf8');
    assert.equal(committed, await script.generateConfigTypes(), 'src/config/schema.generated.ts is stale: run npm run config:types');
  });
});
