// README's metrics table is what platform teams write dashboards and alerts from: every `gatehouse_*`
// metric it lists must be served, with its type and labels, and every one served must be listed. The HELP
// text Prometheus shows beside a series must not contradict the table either: it said the upstream latency
// was "until an upstream HTTP response starts" (stdio children and HTTP+SSE servers feed it too), and that
// refusals were made "by the front door or a check before any upstream" (an upstream the call could not
// reach, and the output check after it, are counted there as well).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { modernRequest, post } from '../helpers/http.js';
import { startReceiver, type Receiver } from '../helpers/otlp.js';

let gw: TestGateway;
let receiver: Receiver;

before(async () => {
  receiver = await startReceiver();
  // An upstream nobody listens on: its calls fail in the upstream stage (upstream_unreachable).
  gw = await startGateway({
    upstreams: [{ name: 'gone', url: 'http://127.0.0.1:1/mcp', era: 'modern' }],
    metrics: { enabled: true, port: 0 },
    tracing: { enabled: true, endpoint: receiver.url },
  });
});
after(async () => {
  await gw?.close();
  await receiver?.close();
});

interface Row { type: string; labels: string[] }

/** README's metrics table: name → type and label names. */
function readmeTable(): Map<string, Row> {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const rows = new Map<string, Row>();
  for (const line of readme.split('\n')) {
    const m = /^\| `(gatehouse_[a-z_]+)` \| (counter|gauge|histogram) \|([^|]*)\|/.exec(line);
    if (m) rows.set(m[1]!, { type: m[2]!, labels: [...m[3]!.matchAll(/`([a-z_]+)`/g)].map((l) => l[1]!).filter((l) => !/^(export_failed|queue_full)$/.test(l)) });
  }
  return rows;
}

test("every metric README's table lists is served with its type, and every one served is listed", async () => {
  const req = modernRequest(1, 'tools/call', { name: 'anything', arguments: {} });
  await post(gw.url, req.body, req.headers);
  const text = await (await request(gw.gateway.metricsUrl!)).body.text();
  const served = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (gatehouse_[a-z_]+) (\w+)$/gm)) served.set(m[1]!, m[2]!);
  const table = readmeTable();
  assert.ok(table.size >= 20, `README's table has ${table.size} rows`);
  for (const [name, row] of table) {
    assert.equal(served.get(name), row.type, `${name}: README says ${row.type}, served as ${served.get(name)}`);
    for (const label of row.labels) {
      const series = text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name}_bucket{`));
      if (series.length > 0) assert.ok(series.some((l) => l.includes(`${label}="`)), `${name} has no label ${label}: ${series[0]}`);
    }
  }
  for (const name of served.keys()) assert.ok(table.has(name), `${name} is served but not in README's table`);
});

test('the HELP text says what README says the metric counts', async () => {
  const text = await (await request(gw.gateway.metricsUrl!)).body.text();
  const help = (name: string) => new RegExp(`^# HELP ${name} (.*)$`, 'm').exec(text)?.[1] ?? '';
  // The call above failed in the upstream stage, and is counted among the refusals.
  assert.match(text, /^gatehouse_refusals_total\{reason="upstream_unreachable"\} 1$/m);
  assert.doesNotMatch(help('gatehouse_refusals_total'), /before any upstream/);
  assert.match(help('gatehouse_refusals_total'), /upstream/);
  assert.match(help('gatehouse_upstream_request_duration_seconds'), /stdio/);
});
