// tools.pinningReviewers (DESIGN.md §7, the admin contract): an entry says who alone may accept the changes
// of the tools it names. One naming no subject and no group would let any admin accept them, the opposite
// of what an entry reads as, so it is refused rather than read as "anyone".

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';
import { compilePinReviewers } from '../../../src/approvals/pin-reviewers.js';

const config = (pinningReviewers: unknown[]) => validateConfigObject({ upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp' }], auth: { anonymous: true }, listen: { host: '127.0.0.1' }, tools: { pinningReviewers } });

test('an entry naming no reviewer is a problem naming its tools', () => {
  assert.deepEqual(unsupportedFeatures(config([{ tools: ['up/a', 'up/b*'], reviewers: {} }])), [
    'tools.pinningReviewers[0].reviewers: name at least one subject or group; an entry naming no one would let any admin accept the changes of up/a, up/b*',
  ]);
  assert.deepEqual(unsupportedFeatures(config([{ tools: ['up/a'], reviewers: { groups: ['team-b'] } }, { tools: ['up/*'], reviewers: { subjects: ['rita'] } }])), []);
});

test('an entry whose tool ref names an upstream the config does not have is refused: it would match nothing, leaving those tools to any admin', () => {
  // Until 5 December `crn/*` for `crm/*` checked clean, and every admin could accept the CRM tools' changes.
  assert.deepEqual(unsupportedFeatures(config([{ tools: ['up/a', 'upp/*'], reviewers: { groups: ['team-b'] } }, { tools: ['*/delete_*', 'lookup'], reviewers: { subjects: ['rita'] } }])), [
    'tools.pinningReviewers[0].tools[1]: "upp/*" names the upstream "upp", which is not configured (upstreams: up); tool refs are upstream/name',
    'tools.pinningReviewers[1].tools[1]: "lookup" names no upstream; tool refs are upstream/name (up/lookup)',
  ]);
});

test('an entry without tools, or with an empty list, is refused by the schema', () => {
  assert.throws(() => config([{ reviewers: { groups: ['team-b'] } }]));
  assert.throws(() => config([{ tools: [], reviewers: { groups: ['team-b'] } }]));
});

test('the first entry whose glob matches decides; no entry: any admin; the admin token: always', () => {
  const validated = config([{ tools: ['up/look?p'], reviewers: { groups: ['team-b'] } }, { tools: ['up/*'], reviewers: { subjects: ['rita'] } }]);
  const rights = compilePinReviewers(validated.tools.pinningReviewers);
  const who = (subject: string, groups: string[], admin = false) => ({ subject, groups, admin });
  assert.equal(rights.mayReview('up/lookup', who('bob', ['team-b'])), true);
  assert.equal(rights.mayReview('up/lookup', who('rita', ['team-a'])), false, 'the first entry decides, though the second names rita');
  assert.equal(rights.mayReview('up/record', who('rita', [])), true);
  assert.equal(rights.mayReview('up/record', who('bob', ['team-b'])), false);
  assert.equal(rights.mayReview('other/x', who('ann', ['team-a'])), true, 'no entry names other/x');
  assert.equal(rights.mayReview('UP/lookup', who('ann', ['team-a'])), true, 'refs are matched with their case, as policy tool globs are');
  assert.equal(rights.mayReview('up/lookup', who('admin-token', [], true)), true);
});
