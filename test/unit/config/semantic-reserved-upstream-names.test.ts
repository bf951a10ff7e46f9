// An upstream named `unknown` was counted under the label the egress proxy gives the connections it cannot
// attribute (gatehouse_egress_proxy_requests_total{upstream="unknown"}), and one named `catalog`, among
// several, under the label of what the catalog answers itself (gatehouse_requests_total{upstream="catalog"}):
// an operator could not tell the two apart. Such names are now refused at load (and by check-config and a
// reload, which run the same checks), naming the label they would be mixed with.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';

const config = (...names: string[]) =>
  validateConfigObject({
    upstreams: names.map((name, i) => ({ name, url: `http://127.0.0.1:${3001 + i}/mcp` })),
    auth: { anonymous: true },
  });
const nameProblems = (names: string[]) => unsupportedFeatures(config(...names)).filter((p) => /^upstreams\[\d+\]\.name:/.test(p));

describe('reserved upstream names', () => {
  it('"unknown" is refused, naming the egress proxy label it would share', () => {
    const problems = nameProblems(['files', 'unknown']);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /^upstreams\[1\]\.name: "unknown" is reserved: the egress proxy .*gatehouse_egress_proxy_requests_total/);
  });

  it('"catalog" is refused, naming the catalog label it would share', () => {
    const problems = nameProblems(['catalog', 'files']);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /^upstreams\[0\]\.name: "catalog" is reserved: .*gatehouse_requests_total/);
  });

  it('other names, and names that only contain or differ in case from a reserved one, pass', () => {
    assert.deepEqual(nameProblems(['files', 'Unknown', 'unknown-tools', 'catalogue']), []);
  });
});
