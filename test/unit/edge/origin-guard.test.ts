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

test('Origin: absent is fine (not a browser); a foreign origin is refused; a local page is allowed', () => {
  const g = compileHostOriginGuard(listen(), true);
  assert.ok(g({ host: 'localhost:8080' }).ok);
  assert.ok(g({ host: 'localhost:8080', origin: 'http://localhost:6274' }).ok);
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
