// The trace backend's credentials are secrets like an upstream's: tracing.headers (the place the schema
// tells operators to put the backend's API key) and a password in tracing.endpoint are scrubbed from every
// log line, and the "tracing on" line names the endpoint without its userinfo or query.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collectSecrets } from '../../../src/config/secrets.js';
import { validateConfigObject } from '../../../src/config/load.js';
import { createLogger } from '../../../src/log/logger.js';
import { startGateway } from '../../helpers/gateway.js';

test('collectSecrets takes the tracing headers and the password of the tracing endpoint', () => {
  const config = validateConfigObject({
    upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp' }],
    auth: { anonymous: true },
    tracing: { enabled: true, endpoint: 'https://otlp:endpoint-password@otlp.example/v1/traces', headers: { 'x-honeycomb-team': 'honeycomb-team-key', authorization: 'Basic b3RscDpiYXNpYy1zZWNyZXQ=' } },
  });
  const secrets = collectSecrets(config);
  for (const s of ['honeycomb-team-key', 'Basic b3RscDpiYXNpYy1zZWNyZXQ=', 'b3RscDpiYXNpYy1zZWNyZXQ=', 'endpoint-password']) assert.ok(secrets.includes(s), `missing ${s} in ${JSON.stringify(secrets)}`);
  const raw: string[] = [];
  const log = createLogger('debug', (l) => raw.push(l), {}, { secrets });
  log.warn('tracing: the last spans could not be exported', { err: 'POST https://otlp:endpoint-password@otlp.example/v1/traces with x-honeycomb-team honeycomb-team-key failed' });
  for (const s of secrets) assert.ok(!raw.join('').includes(s), `${s} leaked: ${raw.join('')}`);
});

test('the "tracing on" line names the endpoint without its userinfo or query', async () => {
  // Nothing listens on port 1: no span is exported in this test, only the start-up line is looked at.
  const gw = await startGateway({ upstreams: [{ name: 'up', url: 'http://127.0.0.1:1/mcp' }], tracing: { enabled: true, endpoint: 'http://otlp-user:url-password@127.0.0.1:1/v1/traces?api_key=query-token' } });
  try {
    const line = gw.logs.find((l) => l.msg === 'tracing on');
    assert.ok(line, JSON.stringify(gw.logs));
    assert.equal(line.endpoint, 'http://127.0.0.1:1/v1/traces');
    for (const s of ['url-password', 'query-token', 'otlp-user']) assert.ok(!JSON.stringify(gw.logs).includes(s), `${s} in ${JSON.stringify(gw.logs)}`);
  } finally {
    await gw.close();
  }
});
