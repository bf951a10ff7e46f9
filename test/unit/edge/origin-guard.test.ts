// DNS-rebinding guard (2026-07-28/basic/transports/streamable-http.mdx §Security Warning: validate Origin,
// 403 when invalid; bind to localhost when run locally).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileHostOriginGuard } from '../../../src/edge/origin-guard.js';
import type { ListenConfig } from '../../../src/config/types.js';

const listen = (over: Partial<ListenConfig> = {}): ListenConfig => ({ host: '127.0.0.1', port: 8080, path: '/mcp', allowedHosts: [], allowedOrigins: [], maxBodyBytes: 1024, maxJsonDepth: 64, requestTimeoutMs: 1000, headersTimeoutMs: 1000, keepAliveTimeoutMs: 5000, maxConnectionsPerIp: 0, trustedProxies: [], ...over });

test('loopback listener: only loopback Host names, any port', () => {
  const g = compileHostOriginGuard(listen(), true);
  for (const host of ['localhost:8080', '127.0.0.1:9999', '[::1]:8080', 'LOCALHOST']) assert.deepEqual(g({ host }), { ok: true }, host);
  assert.equal(g({ host: 'evil.example:8080' }).ok, false);
  assert.equal(g({}).ok, false);
});

test('Origin: absent is fine (not a browser); a foreign origin is refused; the own origin is allowed', () => {
  const g = compileHostOriginGuard(listen(), true);
  assert.ok(g({ host: 'localhost:8080' }).ok);
  assert.ok(g({ host: 'localhost:8080', origin: 'http://localhost:8080' }).ok);
  const evil = g({ host: 'localhost:8080', origin: 'http://evil.example' });
  assert.deepEqual(evil, { ok: false, message: 'Origin "http://evil.example" is not allowed' });
  assert.equal(g({ host: 'localhost:8080', origin: 'null' }).ok, false);
});

test('non-loopback listener: any Host unless listed; Origin must be same-host, listed, or publicUrl', () => {
  const g = compileHostOriginGuard(listen({ host: '0.0.0.0', publicUrl: 'https://mcp.example.com/mcp', allowedOrigins: ['https://app.example.com'] }), false);
  assert.ok(g({ host: '10.1.2.3:8080' }).ok);
  assert.ok(g({ host: 'mcp.example.com', origin: 'https://mcp.example.com' }).ok);
  assert.ok(g({ host: 'mcp.example.com', origin: 'https://app.example.com' }).ok);
  assert.equal(g({ host: 'mcp.example.com', origin: 'https://evil.example' }).ok, false);
  const listed = compileHostOriginGuard(listen({ host: '0.0.0.0', allowedHosts: ['gw.internal'] }), false);
  assert.ok(listed({ host: 'gw.internal:8080' }).ok);
  assert.equal(listed({ host: 'other.internal' }).ok, false);
});

// An origin is scheme, host and port (RFC 6454): until 5 December only the host was compared, so any other
// web app on the same machine (http://127.0.0.1:9999, a dev server, a compromised local tool) could call a
// gateway listening on 127.0.0.1:8080 from its visitors' browsers.
test('Origin on another port of the same host is another origin → refused; the own host:port passes over http and https', () => {
  const g = compileHostOriginGuard(listen(), true);
  assert.deepEqual(g({ host: '127.0.0.1:8080', origin: 'http://127.0.0.1:9999' }), { ok: false, message: 'Origin "http://127.0.0.1:9999" is not allowed' });
  assert.equal(g({ host: 'localhost:8080', origin: 'http://localhost:6274' }).ok, false);
  assert.equal(g({ host: '127.0.0.1:8080', origin: 'http://127.0.0.1' }).ok, false, 'no port is port 80, not 8080');
  // Behind a TLS-terminating proxy the scheme the page used is unknown: both are the request's own origin.
  assert.ok(g({ host: '127.0.0.1:8080', origin: 'http://127.0.0.1:8080' }).ok);
  assert.ok(g({ host: '127.0.0.1:8080', origin: 'https://127.0.0.1:8080' }).ok);
  assert.ok(g({ host: '[::1]:8080', origin: 'http://[::1]:8080' }).ok);
  assert.equal(g({ host: '[::1]:8080', origin: 'http://[::1]:8081' }).ok, false);
  // Another loopback name of this listener, on the port the request came to.
  assert.ok(g({ host: 'localhost:8080', origin: 'http://127.0.0.1:8080' }).ok);
  assert.equal(g({ host: 'localhost:8080', origin: 'http://127.0.0.1:8081' }).ok, false);
  // Only web origins: an extension or a sandboxed page is never the request's own origin.
  assert.equal(g({ host: 'localhost:8080', origin: 'chrome-extension://abcdef' }).ok, false);
  assert.equal(g({ host: 'localhost:8080', origin: 'ws://localhost:8080' }).ok, false);
});

test('a Host without a port names a default port: only an Origin on its own default port matches', () => {
  const g = compileHostOriginGuard(listen({ host: '0.0.0.0' }), false);
  assert.ok(g({ host: 'mcp.example.com', origin: 'https://mcp.example.com' }).ok);
  assert.ok(g({ host: 'mcp.example.com', origin: 'http://mcp.example.com' }).ok);
  assert.equal(g({ host: 'mcp.example.com', origin: 'https://mcp.example.com:8443' }).ok, false);
  assert.equal(g({ host: 'mcp.example.com', origin: 'https://mcp.example.com:80' }).ok, false);
  assert.ok(g({ host: 'mcp.example.com:443', origin: 'https://mcp.example.com' }).ok);
  assert.equal(g({ host: 'mcp.example.com:443', origin: 'http://mcp.example.com' }).ok, false);
  assert.equal(g({ host: 'mcp.example.com:8080', origin: 'https://other.example.com:8080' }).ok, false, 'any Host is allowed, but no other name is an alias');
});

test('allowedHosts: an entry with a port is that port only, for Host and Origin; one without follows the request\'s port', () => {
  const g = compileHostOriginGuard(listen({ host: '0.0.0.0', allowedHosts: ['gw.internal:8443', 'gw.example.com', 'alias.example.com', 'tls.example.com:443'] }), false);
  assert.ok(g({ host: 'gw.internal:8443' }).ok);
  assert.deepEqual(g({ host: 'gw.internal:9000' }), { ok: false, message: 'Host "gw.internal:9000" is not allowed' });
  assert.equal(g({ host: 'gw.internal' }).ok, false);
  assert.ok(g({ host: 'tls.example.com' }).ok, 'browsers leave :443 out of Host');
  assert.ok(g({ host: 'gw.example.com:1234' }).ok);
  assert.ok(g({ host: 'gw.example.com', origin: 'https://gw.internal:8443' }).ok);
  assert.equal(g({ host: 'gw.example.com', origin: 'https://gw.internal:9999' }).ok, false);
  assert.ok(g({ host: 'gw.example.com:8080', origin: 'http://alias.example.com:8080' }).ok);
  assert.equal(g({ host: 'gw.example.com:8080', origin: 'http://alias.example.com:9999' }).ok, false);
  assert.ok(g({ host: 'gw.example.com', origin: 'https://alias.example.com' }).ok);
});

test('allowedOrigins and publicUrl are exact origins', () => {
  const g = compileHostOriginGuard(listen({ allowedOrigins: ['http://localhost:6274'] }), true);
  assert.ok(g({ host: 'localhost:8080', origin: 'http://localhost:6274' }).ok);
  assert.equal(g({ host: 'localhost:8080', origin: 'http://localhost:6275' }).ok, false);
  assert.equal(g({ host: 'localhost:8080', origin: 'https://localhost:6274' }).ok, false);
  const pub = compileHostOriginGuard(listen({ host: '0.0.0.0', allowedHosts: ['10.1.2.3'], publicUrl: 'https://mcp.example.com/mcp' }), false);
  assert.ok(pub({ host: '10.1.2.3:8080', origin: 'https://mcp.example.com' }).ok);
  assert.equal(pub({ host: '10.1.2.3:8080', origin: 'https://mcp.example.com:8443' }).ok, false);
  assert.equal(pub({ host: '10.1.2.3:8080', origin: 'http://mcp.example.com' }).ok, false);
  assert.ok(pub({ host: 'mcp.example.com:8443' }).ok, "publicUrl's host is an allowed Host on any port");
});

test('verdicts stay right past the bound on remembered Host and Origin values', () => {
  const g = compileHostOriginGuard(listen(), true);
  for (let i = 0; i < 1000; i++) {
    assert.equal(g({ host: `h${i}.example:8080` }).ok, false);
    assert.equal(g({ host: 'localhost:8080', origin: `http://localhost:${10_000 + i}` }).ok, false);
  }
  assert.ok(g({ host: 'localhost:8080', origin: 'http://localhost:8080' }).ok);
  assert.equal(g({ host: 'localhost:8080', origin: 'http://localhost:10001' }).ok, false);
  const long = `${'a'.repeat(400)}.example`;
  assert.equal(g({ host: long }).ok, false);
  assert.equal(g({ host: 'localhost:8080', origin: `http://${long}:8080` }).ok, false);
});
