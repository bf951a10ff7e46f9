// Two of Gatehouse's listeners (the MCP endpoint, metrics, the admin API) on one port: check-config said ok,
// and `serve` then failed at every start with "port in use" (a chart with metrics.port equal to listen.port
// crash-looped). The semantic checks refuse it by key, for hosts that overlap (the same, or a wildcard).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';

const config = (raw: Record<string, unknown>) => validateConfigObject({ upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp' }], auth: { anonymous: true }, ...raw });
const clashes = (problems: string[]) => problems.filter((p) => /^(listen|metrics|admin)\.port: /.test(p));

describe('listeners sharing a port', () => {
  it('metrics on the MCP port is refused, on the same host or under a wildcard', () => {
    const same = clashes(unsupportedFeatures(config({ listen: { host: '127.0.0.1', port: 8080 }, metrics: { enabled: true, host: '127.0.0.1', port: 8080 } })));
    assert.equal(same.length, 1, same.join('\n'));
    assert.match(same[0]!, /^metrics\.port: .*listen\.port/);
    const wildcard = clashes(unsupportedFeatures(config({ listen: { host: '0.0.0.0', port: 8080 }, metrics: { enabled: true, host: '127.0.0.1', port: 8080 } })));
    assert.equal(wildcard.length, 1, wildcard.join('\n'));
  });

  it('the admin API on the metrics port is refused, and on the MCP port under a wildcard', () => {
    const problems = clashes(unsupportedFeatures(config({ listen: { host: '::', port: 8080 }, metrics: { enabled: true, host: '127.0.0.1', port: 9090 }, admin: { enabled: true, token: 'a-long-admin-token', host: '127.0.0.1', port: 9090 } })));
    assert.ok(problems.some((p) => p.startsWith('admin.port: ') && p.includes('metrics.port')), problems.join('\n'));
    const onMcp = clashes(unsupportedFeatures(config({ listen: { host: '0.0.0.0', port: 8080 }, admin: { enabled: true, token: 'a-long-admin-token', host: '127.0.0.1', port: 8080 } })));
    assert.ok(onMcp.some((p) => p.startsWith('admin.port: ') && p.includes('listen.port')), onMcp.join('\n'));
  });

  it('distinct ports, port 0, a listener turned off and two distinct addresses pass', () => {
    assert.deepEqual(clashes(unsupportedFeatures(config({ listen: { port: 8080 }, metrics: { enabled: true, port: 9090 }, admin: { enabled: true, token: 'a-long-admin-token', port: 9091 } }))), []);
    assert.deepEqual(clashes(unsupportedFeatures(config({ listen: { port: 0 }, metrics: { enabled: true, port: 0 }, admin: { enabled: true, token: 'a-long-admin-token', port: 0 } }))), []);
    assert.deepEqual(clashes(unsupportedFeatures(config({ listen: { port: 8080 }, metrics: { enabled: false, port: 8080 } }))), []);
    assert.deepEqual(clashes(unsupportedFeatures(config({ listen: { host: '127.0.0.1', port: 8080 }, metrics: { enabled: true, host: '10.0.0.5', port: 8080 } }))), []);
  });
});

// The egress proxy (policy.egressProxy) is a listener of Gatehouse's own as well: on the MCP, metrics or admin
// port it passed check-config (only doctor's port row, which binds every listener, saw it) and `serve`
// failed at every start with "port in use", blaming listen.port. Until 4 December the checks left it out.
describe('the egress proxy sharing a port', () => {
  const proxyClashes = (problems: string[]) => problems.filter((p) => /\.port: /.test(p) && p.includes('egressProxy'));

  it('on the MCP port, or the metrics port under a wildcard, is refused naming both keys', () => {
    const onMcp = proxyClashes(unsupportedFeatures(config({ listen: { host: '127.0.0.1', port: 8080 }, policy: { egressProxy: { enabled: true, host: '127.0.0.1', port: 8080 } } })));
    assert.equal(onMcp.length, 1, onMcp.join('\n'));
    assert.match(onMcp[0]!, /^policy\.egressProxy\.port: .*listen\.port/);
    const onMetrics = proxyClashes(unsupportedFeatures(config({ listen: { port: 8080 }, metrics: { enabled: true, host: '0.0.0.0', port: 3128 }, policy: { egressProxy: { enabled: true, port: 3128 } } })));
    assert.equal(onMetrics.length, 1, onMetrics.join('\n'));
    assert.match(onMetrics[0]!, /metrics\.port/);
  });

  it('turned off, on port 0 or on a port of its own, it passes', () => {
    assert.deepEqual(proxyClashes(unsupportedFeatures(config({ listen: { port: 3128 }, policy: { egressProxy: { enabled: false, port: 3128 } } }))), []);
    assert.deepEqual(proxyClashes(unsupportedFeatures(config({ listen: { port: 0 }, policy: { egressProxy: { enabled: true, port: 0 } } }))), []);
    assert.deepEqual(proxyClashes(unsupportedFeatures(config({ listen: { port: 8080 }, policy: { egressProxy: { enabled: true, port: 3128 } } }))), []);
  });
});
