// listen.allowedHosts and listen.allowedOrigins entries that the DNS-rebinding guard can never match
// (edge/origin-guard.ts compares a Host header as name[:port], and an Origin as a browser sends it:
// scheme://host[:port]). The schema takes any non-empty string, and its description calls the entries "Host
// header values": "localhost:8080" checked "ok" while the guard compared names only, and with it listed (so
// the loopback names are no longer implied) every request, /readyz included, was answered 403. The semantic
// checks then refused ports; since 5 December the guard compares them (an entry with a port is that port
// only), and only a port no Host header can carry is refused, by key, with the form that works.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkConfigCommand } from '../../../src/cli/check-config.js';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';
import { compileHostOriginGuard } from '../../../src/edge/origin-guard.js';

const config = (listen: Record<string, unknown>) => validateConfigObject({ upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp' }], auth: { anonymous: true }, listen: { host: '127.0.0.1', ...listen } });

describe('allow-list entries the guard can never match', () => {
  it('an entry with a port matches the Host header it names, on that port only', () => {
    const guard = compileHostOriginGuard({ allowedHosts: ['localhost:8080', '[::1]:8080'], allowedOrigins: [] }, true);
    assert.ok(guard({ host: 'localhost:8080' }).ok);
    assert.ok(guard({ host: '[::1]:8080' }).ok);
    assert.equal(guard({ host: 'localhost:8081' }).ok, false);
    assert.equal(guard({ host: 'localhost' }).ok, false);
  });

  it('a port no Host carries, a URL, or an IPv6 address without brackets is a problem naming its key', () => {
    const problems = unsupportedFeatures(config({ allowedHosts: ['mcp.example.com', 'localhost:8080', '[::1]:8080', 'localhost:99999', 'localhost:', '[::1]:0', 'https://mcp.example.com', '2001:db8::1', '*', '[::1]', '127.0.0.1'] }));
    assert.deepEqual(problems.map((p) => p.slice(0, p.indexOf(':', p.indexOf(']')))), ['listen.allowedHosts[3]', 'listen.allowedHosts[4]', 'listen.allowedHosts[5]', 'listen.allowedHosts[6]', 'listen.allowedHosts[7]'], problems.join('\n'));
    assert.match(problems[0]!, /port from 1 to 65535/);
    assert.match(problems[3]!, /scheme|URL/);
    assert.match(problems[4]!, /brackets/);
  });

  it('an origin without a scheme or with a path is a problem; scheme://host[:port], a trailing slash, * and null are not', () => {
    const problems = unsupportedFeatures(config({ allowedOrigins: ['https://app.example.com', 'http://localhost:5173/', 'HTTPS://App.Example.com', '*', 'null', 'app.example.com', 'https://app.example.com/inspector'] }));
    assert.equal(problems.length, 2, problems.join('\n'));
    assert.match(problems[0]!, /^listen\.allowedOrigins\[5\]: /);
    assert.match(problems[1]!, /^listen\.allowedOrigins\[6\]: /);
  });

  it('an entry still reading ${...} (a secret absent here, check-config --env-optional) is not judged', () => {
    assert.deepEqual(unsupportedFeatures(config({ allowedHosts: ['${env:PUBLIC_HOST}'], allowedOrigins: ['${env:APP_ORIGIN}'] })), []);
  });

  it('check-config exits 1 on such an entry instead of printing ok', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-allowlists-')), 'gatehouse.yaml');
    writeFileSync(file, 'listen: { allowedHosts: ["localhost:99999"] }\nupstreams:\n  - { name: up, url: "http://127.0.0.1:3001/mcp" }\nauth: { anonymous: true }\n');
    const out: string[] = [];
    const err: string[] = [];
    const code = await checkConfigCommand([file], { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
    assert.equal(code, 1, out.join(''));
    assert.match(err.join(''), /listen\.allowedHosts\[0\]: /);
  });
});
