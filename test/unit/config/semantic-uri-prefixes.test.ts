// Two upstreams whose uriPrefixes hold the same prefix: a resources/read of a URI no list showed that
// matches it went, silently, to whichever came first in the file (src/catalog/README.md §Where resource
// requests go: the member whose uriPrefixes match it). check-config said ok and nothing warned that the
// other upstream's claim was never used. The semantic checks now refuse it, naming both upstreams; a longer
// prefix inside another's (the longest wins) stays a valid way to carve out part of a space.
// Spec: 2026-07-28/server/resources.mdx §Error Handling (an unknown resource is -32602, not another's).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';

const config = (a: string[], b: string[]) =>
  validateConfigObject({
    upstreams: [
      { name: 'files', url: 'http://127.0.0.1:3001/mcp', uriPrefixes: a },
      { name: 'backup', url: 'http://127.0.0.1:3002/mcp', uriPrefixes: b },
    ],
    auth: { anonymous: true },
  });
const prefixProblems = (problems: string[]) => problems.filter((p) => p.includes('uriPrefixes'));

describe('uriPrefixes claimed twice', () => {
  it('the same prefix on two upstreams is refused, naming both', () => {
    const problems = prefixProblems(unsupportedFeatures(config(['file:///data/'], ['s3://bucket/', 'file:///data/'])));
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /^upstreams\[1\]\.uriPrefixes\[1\]: "file:\/\/\/data\/" .*"files"/);
  });

  it('distinct and nested prefixes pass (the longest match wins)', () => {
    assert.deepEqual(prefixProblems(unsupportedFeatures(config(['file:///data/'], ['file:///data/archive/', 's3://bucket/']))), []);
    assert.deepEqual(prefixProblems(unsupportedFeatures(config(['file:///data/'], []))), []);
  });
});
