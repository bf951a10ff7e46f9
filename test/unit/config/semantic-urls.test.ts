// URLs the schema's pattern lets through but no URL parser takes (a port past 65535, an unclosed IPv6
// bracket) cannot be served: the semantic checks refuse them, so check-config, start-up, reloads and doctor
// all say so by key instead of "ok" followed by a crash.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkConfigCommand } from '../../../src/cli/check-config.js';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';

const config = (raw: Record<string, unknown>) => validateConfigObject({ upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp' }], auth: { anonymous: true }, ...raw });

describe('URLs that do not parse', () => {
  it('an upstream URL with a port past 65535 is a problem naming its key', () => {
    const problems = unsupportedFeatures(config({ upstreams: [{ name: 'ok', url: 'http://127.0.0.1:3001/mcp' }, { name: 'bad', url: 'http://127.0.0.1:99999/mcp' }] }));
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /^upstreams\[1\]\.url: /);
    assert.match(problems[0]!, /not a URL/);
  });

  it('every URL key is judged: tokenUrl, publicUrl, the OAuth endpoints, the Redis URL', () => {
    const c = config({
      upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp', clientCredentials: { tokenUrl: 'https://[::1/token', clientId: 'c', clientSecret: 's' } }],
      listen: { host: '127.0.0.1', publicUrl: 'https://mcp.example.com:70000/mcp' },
      auth: { oauth: { issuer: 'https://as.example.com:123456', jwksUri: 'https://as.example.com:99999/jwks', audience: 'https://mcp.example.com:70000/mcp', introspection: { url: 'https://[zz]/i', clientId: 'c', clientSecret: 's' } } },
      store: { kind: 'redis', url: 'redis://127.0.0.1:99999' },
    });
    const problems = unsupportedFeatures(c);
    for (const key of ['upstreams[0].clientCredentials.tokenUrl', 'listen.publicUrl', 'auth.oauth.issuer', 'auth.oauth.jwksUri', 'auth.oauth.introspection.url', 'store.url']) {
      assert.ok(problems.some((p) => p.startsWith(`${key}: `)), `${key} in:\n${problems.join('\n')}`);
    }
  });

  it('a URL still reading ${...} (a secret absent here, check-config --env-optional) is not judged', () => {
    assert.deepEqual(unsupportedFeatures(config({ upstreams: [{ name: 'up', url: 'http://${env:CRM_HOST}/mcp' }] })), []);
  });

  it('check-config exits 1 on it instead of printing ok', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-urls-')), 'gatehouse.yaml');
    writeFileSync(file, 'upstreams:\n  - { name: up, url: "http://127.0.0.1:99999/mcp" }\nauth: { anonymous: true }\n');
    const out: string[] = [];
    const err: string[] = [];
    const code = await checkConfigCommand([file], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
    assert.equal(code, 1, out.join(''));
    assert.match(err.join(''), /upstreams\[0\]\.url: /);
  });
});
