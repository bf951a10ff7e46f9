// `gatehouse_upstream_info{upstream,era}` is filled in by `gatehouse_upstream_up`'s collect, from one probe
// of the upstreams per scrape. prom-client's registry asks every metric for its values at once (a map over
// the metrics, then Promise.all), and `info`, having no collect of its own, gave its values the moment it
// was asked: before `up`'s probe had answered. So a scrape showed the era the scrape before it had found:
// none at all on the first scrape after start (an alert on a missing series fired), and an upstream that
// moved from the legacy to the modern era (an upgrade) still shown as legacy until the next scrape. Now
// each scrape's info comes from that scrape's probe.

import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { GatewayMetrics } from '../../../src/metrics/metrics.js';

test("each scrape's gatehouse_upstream_info is that scrape's probe, from the first scrape on", async () => {
  let era = 'legacy';
  let probes = 0;
  const metrics = new GatewayMetrics({
    inFlight: () => 0,
    legacySessions: () => 0,
    storeUp: () => true,
    // The probe answers later, as a real one over the network does.
    upstreams: async () => {
      probes++;
      await sleep(20);
      return [{ name: 'crm', up: true, era }];
    },
  });
  const first = await metrics.registry.metrics();
  assert.match(first, /^gatehouse_upstream_up\{upstream="crm"\} 1$/m);
  assert.match(first, /^gatehouse_upstream_info\{upstream="crm",era="legacy"\} 1$/m, 'the first scrape shows the era found');
  era = 'modern';
  const second = await metrics.registry.metrics();
  assert.match(second, /^gatehouse_upstream_info\{upstream="crm",era="modern"\} 1$/m);
  assert.doesNotMatch(second, /era="legacy"/, 'not the era of the scrape before');
  assert.equal(probes, 2, 'one probe of the upstreams per scrape serves both gauges');
});
