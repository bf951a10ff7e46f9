// The reviewers a config names (tools.pinningReviewers, policy.approvals[].reviewers) must be able to reach
// the admin API, which admits admin.token and the access tokens of admin.groups, nothing else (DESIGN.md §7,
// the admin contract). Until 5 December nothing checked it: a group spelled wrong, or named with no
// admin.groups at all, left its changed tools refused and its approvals waiting until the admin token acted.
// Now both are warnings, located by check-config (the built CLI) and logged by serve: a group or subject
// named while admin.groups is empty (no access token can ever be it, but admin.token still decides, and
// DESIGN.md §7's own example is such a config), and a group that is none of admin.groups (a reviewer may hold
// an admin group and this one, so it can be right).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { configWarnings } from '../../../src/config/config-warnings.js';
import { loadConfigFile, validateConfigObject } from '../../../src/config/load.js';
import { unsupportedFeatures } from '../../../src/config/semantic-checks.js';
import { ROOT, runCli } from '../../helpers/cli.js';

const OAUTH = { issuer: 'https://issuer.example', audience: 'http://127.0.0.1:3000/mcp' };
const config = (admin: Record<string, unknown>, more: { pinningReviewers?: unknown[]; approvals?: unknown[] } = {}) =>
  validateConfigObject({
    upstreams: [{ name: 'up', url: 'http://127.0.0.1:3001/mcp' }],
    listen: { host: '127.0.0.1', port: 3000, publicUrl: OAUTH.audience },
    auth: { oauth: OAUTH },
    admin: { enabled: true, port: 9465, ...admin },
    tools: { pinning: 'enforce', pinningReviewers: more.pinningReviewers ?? [] },
    policy: { approvals: more.approvals ?? [] },
  });
const TOKEN = 'admin-token-0123456789abcdef';
const reach = (problems: string[]) => problems.filter((p) => /can never review|none of admin\.groups/.test(p));

test('with admin.groups empty, every group and subject a pin entry or an approval rule names is warned of, by key and name; the config serves', () => {
  const c = config({ token: TOKEN }, {
    pinningReviewers: [{ tools: ['up/*'], reviewers: { groups: ['crm-owners'], subjects: ['rita'] } }],
    approvals: [{ id: 'deletes', tools: ['up/delete'], reviewers: { groups: ['sre'] } }, { id: 'open', tools: ['up/write'] }],
  });
  assert.deepEqual(reach(unsupportedFeatures(c)), [], 'the config serves');
  assert.deepEqual(reach(configWarnings(c)), [
    'tools.pinningReviewers[0].reviewers.groups[0]: group "crm-owners" can never review: admin.groups is empty, so the admin API admits only admin.token and no access token of any group; add "crm-owners" to admin.groups (with auth.oauth), or remove it',
    'tools.pinningReviewers[0].reviewers.subjects[0]: subject "rita" can never review: admin.groups is empty, so the admin API admits only admin.token and no access token of any subject; list a group of theirs in admin.groups (with auth.oauth), or remove it',
    'policy.approvals[0].reviewers.groups[0]: group "sre" can never review: admin.groups is empty, so the admin API admits only admin.token and no access token of any group; add "sre" to admin.groups (with auth.oauth), or remove it',
  ]);
  // A rule naming no one is any admin's (here, the token's): nothing unreachable is named.
  assert.deepEqual(reach(configWarnings(config({ token: TOKEN }, { approvals: [{ id: 'open', tools: ['up/write'] }] }))), []);
});

test('a group that is none of admin.groups is a warning, not a refusal: a reviewer may hold an admin group and it', () => {
  const c = config({ groups: ['sre', 'Team-B'] }, {
    pinningReviewers: [{ tools: ['up/lookup'], reviewers: { groups: ['team-b'] } }, { tools: ['up/*'], reviewers: { groups: ['sre'] } }],
    approvals: [{ id: 'deletes', tools: ['up/delete'], reviewers: { groups: ['sre', 'srre'] } }],
  });
  assert.deepEqual(reach(unsupportedFeatures(c)), [], 'the config serves');
  const warnings = configWarnings(c);
  assert.equal(warnings.length, 2, warnings.join('\n'));
  assert.match(warnings[0]!, /^tools\.pinningReviewers\[0\]\.reviewers\.groups\[0\]: group "team-b" is none of admin\.groups \(sre, Team-B\), the only groups the admin API admits \(admin\.groups has "Team-B"; groups are compared exactly\): only a reviewer in one of those as well can review these tools' changes/);
  assert.match(warnings[1]!, /^policy\.approvals\[0\]\.reviewers\.groups\[1\]: group "srre" is none of admin\.groups \(sre, Team-B\), the only groups the admin API admits: only a reviewer in one of those as well can review this rule's approvals, and if "srre" is a typo no one but admin\.token can/);
  // Every group named admitted: nothing to say.
  assert.deepEqual(configWarnings(config({ groups: ['sre', 'team-b'] }, { pinningReviewers: [{ tools: ['up/*'], reviewers: { groups: ['team-b'], subjects: ['rita'] } }] })), []);
});

test('with the admin API off, the checks that need it speak instead (tools.pinning: enforce), not these', () => {
  const c = config({ enabled: false, token: TOKEN }, { pinningReviewers: [{ tools: ['up/*'], reviewers: { groups: ['crm-owners'] } }] });
  assert.deepEqual(reach(unsupportedFeatures(c)), []);
  assert.deepEqual(configWarnings(c), []);
});

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-reviewer-reach-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('check-config locates both at the group, as warnings: exit 0', async () => {
  const base = ['upstreams:', '  - { name: up, url: "http://127.0.0.1:3001/mcp" }', 'listen: { host: 127.0.0.1, port: 3000, publicUrl: "http://127.0.0.1:3000/mcp" }', 'auth: { oauth: { issuer: "https://issuer.example", audience: "http://127.0.0.1:3000/mcp" } }', 'tools:', '  pinning: enforce', '  pinningReviewers:', '    - tools: ["up/*"]', '      reviewers:', '        groups: [crm-owner]'];
  const typo = join(dir, 'typo.yaml');
  writeFileSync(typo, [...base, 'admin: { enabled: true, port: 9465, groups: [crm-owners] }', ''].join('\n'));
  const warned = await runCli(['check-config', typo]);
  assert.equal(warned.code, 0, warned.stderr);
  assert.match(warned.stderr, /^warning: .*typo\.yaml:10:18 tools\.pinningReviewers\[0\]\.reviewers\.groups\[0\]: group "crm-owner" is none of admin\.groups \(crm-owners\)/m);

  const tokenOnly = join(dir, 'token-only.yaml');
  writeFileSync(tokenOnly, [...base, `admin: { enabled: true, port: 9465, token: "${TOKEN}" }`, ''].join('\n'));
  const tokenOnlyWarned = await runCli(['check-config', tokenOnly]);
  assert.equal(tokenOnlyWarned.code, 0, tokenOnlyWarned.stderr);
  assert.match(tokenOnlyWarned.stderr, /^warning: .*token-only\.yaml:10:18 tools\.pinningReviewers\[0\]\.reviewers\.groups\[0\]: group "crm-owner" can never review: admin\.groups is empty/m);
});

test('the shipped example admits every group its reviewers lists name', async () => {
  const example = await loadConfigFile(join(ROOT, 'config/gatehouse.example.yaml'), { CRM_CLIENT_SECRET: 's', OAUTH_CLIENT_SECRET: 's', GATEHOUSE_ADMIN_TOKEN: TOKEN });
  assert.ok(example.tools.pinningReviewers.length > 0 && example.admin.groups.length > 0, 'the example shows both');
  assert.deepEqual(configWarnings(example), []);
});
