// The Grafana dashboard shipped in the chart (issue 6 item 5): every panel query is valid PromQL (checked by
// the real `promtool check rules`, with the dashboard variables filled in), and every metric it reads is
// one a running Gatehouse exposes, so a renamed metric cannot leave a panel silently empty.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { startFakeUpstream, type FakeUpstream } from '../fixtures/upstreams/fake-upstream.js';

const DASHBOARD = new URL('../../charts/gatehouse/dashboards/gatehouse.json', import.meta.url);

function panelQueries(): string[] {
  const out: string[] = [];
  const walk = (o: unknown): void => {
    if (Array.isArray(o)) return o.forEach(walk);
    if (typeof o !== 'object' || o === null) return;
    const expr = (o as { expr?: unknown }).expr;
    if (typeof expr === 'string') out.push(expr);
    Object.values(o).forEach(walk);
  };
  walk(JSON.parse(readFileSync(DASHBOARD, 'utf8')));
  return out;
}

/** Grafana's variables, filled in as Grafana would for "All" and a 5-minute rate window. */
function withVariables(expr: string): string {
  return expr.replace(/\$__rate_interval|\$__interval/g, '5m').replace(/\$\{?[A-Za-z_]+\}?/g, '.*');
}

let upstream: FakeUpstream | undefined;
let gw: TestGateway | undefined;
after(async () => {
  await gw?.close();
  await upstream?.close();
});

test('every panel query is valid PromQL (promtool check rules)', () => {
  const queries = panelQueries();
  assert.ok(queries.length >= 10, `the dashboard has ${queries.length} queries`);
  const rules = { groups: [{ name: 'gatehouse-dashboard', rules: queries.map((q, i) => ({ record: `dashboard:query_${i}`, expr: withVariables(q) })) }] };
  const file = join(mkdtempSync(join(tmpdir(), 'gatehouse-dashboard-')), 'rules.yml');
  writeFileSync(file, stringify(rules));
  const check = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(check.error, undefined, 'promtool must be installed (the prometheus package)');
  assert.equal(check.status, 0, `${check.stdout}\n${check.stderr}`);
});

test('every metric the dashboard reads is exposed by a running Gatehouse', async () => {
  upstream = await startFakeUpstream((_req, res, body) => {
    const msg = JSON.parse(body) as { id?: unknown };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { tools: [], resultType: 'complete' } }));
  }, { handshake: 'modern' });
  gw = await startGateway({ upstreams: [{ name: 'up', url: upstream.url }], metrics: { enabled: true, port: 0 } });
  const exposition = await (await request(gw.gateway.metricsUrl!)).body.text();
  const families = new Set([...exposition.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
  const used = new Set(panelQueries().flatMap((q) => [...q.matchAll(/\b((?:gatehouse|process)_[a-z_]+)/g)].map((m) => m[1]!)));
  for (const name of used) {
    const family = name.replace(/_(bucket|sum|count)$/, '');
    assert.ok(families.has(name) || families.has(family), `the dashboard reads ${name}, which Gatehouse does not expose`);
  }
});
