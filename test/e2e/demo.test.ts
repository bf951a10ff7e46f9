// The demo a newcomer gets from `npm start`: the default config, in front of server-everything that
// Gatehouse launches itself, with auth off on loopback and the log saying so.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT, serveCli } from '../helpers/cli.js';

test('npm start serves config/gatehouse.default.yaml on 127.0.0.1:8080/mcp with auth off on loopback', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts.start, 'node dist/main.js serve --config config/gatehouse.default.yaml');
  const config = parse(readFileSync(join(ROOT, 'config/gatehouse.default.yaml'), 'utf8')) as Record<string, any>;
  assert.equal(config.listen?.host ?? '127.0.0.1', '127.0.0.1');
  assert.equal(config.listen?.port ?? 8080, 8080);
  assert.equal(config.auth.anonymous, true);
});

test('the demo config serves server-everything to a real client (port overridden to a free one)', async () => {
  const gw = await serveCli(['--config', 'config/gatehouse.default.yaml', '--port', '0']);
  after(() => gw.stop());
  assert.match(gw.stderr(), /"msg":"authentication is off: anonymous access on a loopback listener"/);
  assert.match(gw.stdout(), /claude mcp add --transport http gatehouse http:\/\/127\.0\.0\.1:\d+\/mcp/);
  const client = new Client({ name: 'demo-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
  const { tools } = await client.listTools();
  assert.ok(tools.some((t) => t.name === 'echo'), 'server-everything tools are listed');
  const result = await client.callTool({ name: 'echo', arguments: { message: 'hello through the door' } });
  assert.match(JSON.stringify(result.content), /hello through the door/);
  await client.close();
  assert.equal(await gw.stop(), 0);
});
