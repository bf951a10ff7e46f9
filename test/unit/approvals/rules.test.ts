// The pure parts of approvals (issue 14): which rule selects a call (the first that matches caller, tool,
// annotations and argument values), the policy version approvals are bound to, who may review, and the
// state an approval has as of a moment.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ApprovalRule } from '../../../src/config/schema.generated.js';
import type { Route } from '../../../src/pipeline/context.js';
import type { Principal } from '../../../src/pipeline/principal.js';
import { effectiveState, type Approval } from '../../../src/approvals/approval.js';
import { approvalRuleFor, compileApprovalRules, mayReview, policyVersion } from '../../../src/approvals/rules.js';

const caller = (p: Partial<Principal> = {}): Principal => ({ subject: 'key:alice', scopes: [], groups: [], via: 'api_key', keyId: 'alice', ...p });
const route = (ref: string, annotations?: Record<string, unknown>): Route => {
  const [upstream, original] = ref.split('/') as [string, string];
  return { kind: 'tools', ref, publicName: original, original, upstream, listed: true, params: [], ...(annotations ? { annotations } : {}) };
};
const rule = (r: Partial<ApprovalRule> & { id: string }): ApprovalRule => ({ by: 'reviewer', reviewers: { subjects: [], groups: [] }, deadlineSeconds: 3600, reuse: 1, ...r });
const selected = (rules: ApprovalRule[], ref: string, args: Record<string, unknown> = {}, who = caller(), annotations?: Record<string, unknown>) =>
  approvalRuleFor(compileApprovalRules(rules), who, route(ref, annotations), args)?.id;

describe('compileApprovalRules / approvalRuleFor', () => {
  it('keeps what the rule says, in milliseconds', () => {
    const [c] = compileApprovalRules([rule({ id: 'r', by: 'user', deadlineSeconds: 90, reuse: 3, reviewers: { subjects: ['sre'], groups: ['ops'] } })]);
    assert.equal(c!.id, 'r');
    assert.equal(c!.by, 'user');
    assert.equal(c!.deadlineMs, 90_000);
    assert.equal(c!.reuse, 3);
    assert.deepEqual(c!.reviewers, { subjects: ['sre'], groups: ['ops'] });
  });

  it('no rules: nothing needs approval', () => {
    assert.equal(selected([], 'up/record'), undefined);
  });

  it('the first rule that selects the call wins', () => {
    const rules = [rule({ id: 'narrow', tools: ['up/record'] }), rule({ id: 'wide', tools: ['up/*'] }), rule({ id: 'everything' })];
    assert.equal(selected(rules, 'up/record'), 'narrow');
    assert.equal(selected(rules, 'up/lookup'), 'wide');
    assert.equal(selected(rules, 'other/lookup'), 'everything');
    assert.equal(selected([rule({ id: 'everything' }), ...rules], 'up/record'), 'everything');
  });

  it('tool globs: * spans any run of characters, the rest is literal', () => {
    const rules = [rule({ id: 'r', tools: ['crm/delete_*', 'files/write'] })];
    assert.equal(selected(rules, 'crm/delete_user'), 'r');
    assert.equal(selected(rules, 'crm/delete_'), 'r');
    assert.equal(selected(rules, 'crm/get_user'), undefined);
    assert.equal(selected(rules, 'files/write'), 'r');
    assert.equal(selected(rules, 'files/writer'), undefined);
    assert.equal(selected(rules, 'xcrm/delete_user'), undefined);
  });

  it('annotations: the tool must declare each with that value; undeclared does not match', () => {
    const rules = [rule({ id: 'destructive', annotations: { destructiveHint: true } })];
    assert.equal(selected(rules, 'up/drop', {}, caller(), { destructiveHint: true }), 'destructive');
    assert.equal(selected(rules, 'up/drop', {}, caller(), { destructiveHint: false }), undefined);
    assert.equal(selected(rules, 'up/drop', {}, caller(), { readOnlyHint: false }), undefined);
    assert.equal(selected(rules, 'up/drop'), undefined, 'a tool without annotations');
  });

  it('caller selectors: subjects, groups, keys', () => {
    const rules = [rule({ id: 'interns', groups: ['interns'] }), rule({ id: 'bob', subjects: ['key:bob'] }), rule({ id: 'key', keys: ['ci'] })];
    assert.equal(selected(rules, 'up/x', {}, caller({ groups: ['interns'] })), 'interns');
    assert.equal(selected(rules, 'up/x', {}, caller({ subject: 'key:bob', keyId: 'bob' })), 'bob');
    assert.equal(selected(rules, 'up/x', {}, caller({ subject: 'key:ci', keyId: 'ci' })), 'key');
    assert.equal(selected(rules, 'up/x'), undefined);
  });

  it('argument globs by dotted path, case-insensitive, * spans anything', () => {
    const rules = [rule({ id: 'external', tools: ['mail/send'], arguments: { 'recipient.email': '*@external.example' } })];
    assert.equal(selected(rules, 'mail/send', { recipient: { email: 'eve@external.example' } }), 'external');
    assert.equal(selected(rules, 'mail/send', { recipient: { email: 'EVE@EXTERNAL.Example' } }), 'external');
    assert.equal(selected(rules, 'mail/send', { recipient: { email: 'eve@external.example.org' } }), undefined, 'anchored at the end');
    assert.equal(selected(rules, 'mail/send', { recipient: { email: 'bob@internal.example' } }), undefined);
    assert.equal(selected(rules, 'mail/send', { recipient: { email: 'eve@externalXexample' } }), undefined, '. is literal');
  });

  it('regex characters in an argument glob are literal', () => {
    const rules = [rule({ id: 'r', arguments: { q: 'a+b?(c)[d]|^$' } })];
    assert.equal(selected(rules, 'up/x', { q: 'a+b?(c)[d]|^$' }), 'r');
    assert.equal(selected(rules, 'up/x', { q: 'aab(c)d' }), undefined);
  });

  it('a string glob matches numbers and booleans by their text; numbers and booleans must be equal exactly', () => {
    assert.equal(selected([rule({ id: 'r', arguments: { amount: '1000*' } })], 'up/pay', { amount: 100000 }), 'r');
    assert.equal(selected([rule({ id: 'r', arguments: { force: 'TRUE' } })], 'up/x', { force: true }), 'r');
    const numeric = [rule({ id: 'n', arguments: { amount: 100 } })];
    assert.equal(selected(numeric, 'up/pay', { amount: 100 }), 'n');
    assert.equal(selected(numeric, 'up/pay', { amount: '100' }), undefined, 'a string is not the number');
    assert.equal(selected(numeric, 'up/pay', { amount: 100.5 }), undefined);
    const flag = [rule({ id: 'b', arguments: { 'options.force': true } })];
    assert.equal(selected(flag, 'up/x', { options: { force: true } }), 'b');
    assert.equal(selected(flag, 'up/x', { options: { force: 'true' } }), undefined);
    assert.equal(selected(flag, 'up/x', { options: { force: 1 } }), undefined);
    assert.equal(selected(flag, 'up/x', { options: { force: false } }), undefined);
  });

  it('a glob does not match objects, arrays or null', () => {
    const rules = [rule({ id: 'r', arguments: { target: '*' } })];
    assert.equal(selected(rules, 'up/x', { target: '' }), 'r');
    assert.equal(selected(rules, 'up/x', { target: { a: 1 } }), undefined);
    assert.equal(selected(rules, 'up/x', { target: ['a'] }), undefined);
    assert.equal(selected(rules, 'up/x', { target: null }), undefined);
  });

  it('a missing path does not match, nor does one through an array or a primitive, nor an inherited property', () => {
    const rules = [rule({ id: 'r', arguments: { 'a.b': '*' } }), rule({ id: 'n', arguments: { 'a.c': 0 } })];
    assert.equal(selected(rules, 'up/x', {}), undefined);
    assert.equal(selected(rules, 'up/x', { a: {} }), undefined);
    assert.equal(selected(rules, 'up/x', { a: 'b' }), undefined);
    assert.equal(selected(rules, 'up/x', { a: [{ b: 'x' }] }), undefined);
    assert.equal(selected(rules, 'up/x', { 'a.b': 'x' }), undefined, 'a key with a dot in it is not a path');
    assert.equal(selected([rule({ id: 'proto', arguments: { 'a.constructor': '*' } })], 'up/x', { a: {} }), undefined);
    assert.equal(selected(rules, 'up/x', { a: { b: 'x' } }), 'r');
    assert.equal(selected(rules, 'up/x', { a: { c: 0 } }), 'n');
  });

  it('every argument entry must match, and the tools too; a rule that does not match lets the next one decide', () => {
    const rules = [rule({ id: 'big-external', tools: ['bank/*'], arguments: { amount: '*000', 'to.country': 'X*' } }), rule({ id: 'bank', tools: ['bank/*'] })];
    assert.equal(selected(rules, 'bank/transfer', { amount: 5000, to: { country: 'XY' } }), 'big-external');
    assert.equal(selected(rules, 'bank/transfer', { amount: 5000, to: { country: 'DE' } }), 'bank');
    assert.equal(selected(rules, 'bank/transfer', { amount: 50, to: { country: 'XY' } }), 'bank');
    assert.equal(selected(rules, 'shop/transfer', { amount: 5000, to: { country: 'XY' } }), undefined);
  });
});

describe('policyVersion', () => {
  const policy = { rules: [{ access: 'allow', tools: ['*'] }], approvals: [rule({ id: 'r', tools: ['up/*'] })], budgets: [] };

  it('is a short hex digest, the same for the same policy whatever the key order', () => {
    const v = policyVersion(policy);
    assert.match(v, /^[0-9a-f]{16}$/);
    assert.equal(policyVersion(structuredClone(policy)), v);
    const reordered = { budgets: [], approvals: [{ reuse: 1, deadlineSeconds: 3600, reviewers: { groups: [], subjects: [] }, by: 'reviewer', tools: ['up/*'], id: 'r' }], rules: [{ tools: ['*'], access: 'allow' }] };
    assert.equal(policyVersion(reordered), v);
  });

  it('changes when the policy changes', () => {
    const v = policyVersion(policy);
    assert.notEqual(policyVersion({ ...policy, approvals: [rule({ id: 'r', tools: ['up/*'], reviewers: { subjects: ['sre'], groups: [] } })] }), v);
    assert.notEqual(policyVersion({ ...policy, approvals: [rule({ id: 'r', tools: ['up/*'], deadlineSeconds: 60 })] }), v);
    assert.notEqual(policyVersion({ ...policy, budgets: [{ id: 'b', per: 'subject', window: 'day', limit: 1 }] }), v);
    // Order within a list is meaning (the first rule wins), so it changes the version.
    const two = { approvals: [rule({ id: 'a' }), rule({ id: 'b' })] };
    assert.notEqual(policyVersion({ approvals: [...two.approvals].reverse() }), policyVersion(two));
  });
});

describe('mayReview', () => {
  const reviewer = (subject: string, groups: string[] = []) => ({ subject, groups });

  it('a rule naming no reviewers lets anyone decide', () => {
    assert.equal(mayReview({ reviewers: { subjects: [], groups: [] } }, reviewer('anyone')), true);
  });

  it('by subject or by group, any one suffices', () => {
    const r = { reviewers: { subjects: ['sre-lead'], groups: ['security', 'dba'] } };
    assert.equal(mayReview(r, reviewer('sre-lead')), true);
    assert.equal(mayReview(r, reviewer('someone', ['dba'])), true);
    assert.equal(mayReview(r, reviewer('someone', ['dev', 'security'])), true);
    assert.equal(mayReview(r, reviewer('someone', ['dev'])), false);
    assert.equal(mayReview(r, reviewer('SRE-LEAD')), false, 'subjects are exact');
    assert.equal(mayReview(r, reviewer('dba')), false, 'a subject is not a group');
  });

  it('only subjects, or only groups', () => {
    assert.equal(mayReview({ reviewers: { subjects: ['a'], groups: [] } }, reviewer('b', ['a'])), false);
    assert.equal(mayReview({ reviewers: { subjects: [], groups: ['g'] } }, reviewer('g')), false);
    assert.equal(mayReview({ reviewers: { subjects: [], groups: ['g'] } }, reviewer('x', ['g'])), true);
  });
});

describe('effectiveState', () => {
  const at = (state: Approval['state'], expiresAt = 1_000) => ({ state, expiresAt }) as Approval;

  it('pending and approved expire at their deadline', () => {
    assert.equal(effectiveState(at('pending'), 999), 'pending');
    assert.equal(effectiveState(at('pending'), 1_000), 'expired');
    assert.equal(effectiveState(at('pending'), 5_000), 'expired');
    assert.equal(effectiveState(at('approved'), 999), 'approved');
    assert.equal(effectiveState(at('approved'), 1_000), 'expired');
  });

  it('rejected, used and expired stay what they are', () => {
    for (const s of ['rejected', 'used', 'expired'] as const) {
      assert.equal(effectiveState(at(s), 0), s);
      assert.equal(effectiveState(at(s), 10_000), s);
    }
  });
});
