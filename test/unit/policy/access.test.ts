// Access rules (issue 5 item 4): who sees and calls which tool, prompt and resource. Rules are read in
// order and the first that matches the caller and the item decides; once rules name a kind, anything of
// that kind they do not allow is hidden; an API key's own tool list narrows further.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Principal } from '../../../src/pipeline/principal.js';
import { AccessPolicy } from '../../../src/policy/access.js';
import { compileGlob } from '../../../src/policy/glob.js';

const caller = (p: Partial<Principal> = {}): Principal => ({ subject: 'alice', scopes: [], groups: [], via: 'jwt', ...p });

describe('AccessPolicy', () => {
  it('without rules everything is visible, to every caller alike', () => {
    const policy = new AccessPolicy([]);
    assert.equal(policy.perCaller(false), false);
    assert.equal(policy.allows(caller(), 'tools', 'crm/delete_user'), true);
    assert.equal(policy.allows(caller(), 'resources', 'file:///etc/passwd'), true);
  });

  it('an API key tool list narrows tools only, whatever the rules say', () => {
    const policy = new AccessPolicy([]);
    assert.equal(policy.perCaller(true), true);
    const key = caller({ via: 'api_key', toolGlobs: ['crm/get_*'] });
    assert.equal(policy.allows(key, 'tools', 'crm/get_user'), true);
    assert.equal(policy.allows(key, 'tools', 'crm/delete_user'), false);
    assert.equal(policy.allows(key, 'prompts', 'crm/summarize'), true);
  });

  it('rules that select no caller hide the same items from everyone; selecting callers or governing resources makes views differ', () => {
    const guard = new AccessPolicy([
      { access: 'deny', tools: ['crm/admin_*'] },
      { access: 'allow', tools: ['*'] },
    ]);
    assert.equal(guard.perCaller(false), false, 'the same list for every caller');
    assert.equal(guard.hidesFromEveryone('tools', 'crm/admin_reset'), true);
    assert.equal(guard.hidesFromEveryone('tools', 'crm/get_user'), false);
    assert.equal(guard.hidesFromEveryone('prompts', 'crm/anything'), false, 'no rule names prompts');
    assert.equal(new AccessPolicy([{ access: 'allow', tools: ['crm/*'] }]).hidesFromEveryone('tools', 'files/read'), true, 'an allow-list hides what it does not name');
    assert.equal(guard.perCaller(true), true, 'a key with its own tool list');
    assert.equal(new AccessPolicy([{ access: 'allow', keys: ['ci'], tools: ['*'] }]).perCaller(false), true);
    assert.equal(new AccessPolicy([{ access: 'allow', groups: ['ops'], prompts: ['*'] }]).perCaller(false), true);
    assert.equal(new AccessPolicy([{ access: 'deny', resources: ['file:///secret/*'] }]).perCaller(false), true, 'resources: only the catalog filters their lists and updates');
  });

  it('the first rule that matches caller and item decides; unmatched items of a governed kind are hidden', () => {
    const policy = new AccessPolicy([
      { access: 'deny', groups: ['support'], tools: ['crm/delete_*'] },
      { access: 'allow', tenants: ['acme'], tools: ['crm/*'] },
      { access: 'allow', scopes: ['admin', 'write'], tools: ['*'] },
    ]);
    const support = caller({ tenant: 'acme', groups: ['support'] });
    assert.equal(policy.allows(support, 'tools', 'crm/delete_user'), false, 'the deny comes first');
    assert.equal(policy.allows(support, 'tools', 'crm/get_user'), true);
    assert.equal(policy.allows(caller({ tenant: 'other' }), 'tools', 'crm/get_user'), false, 'no rule matches: hidden');
    assert.equal(policy.allows(caller({ scopes: ['admin'] }), 'tools', 'files/read'), false, 'scopes: all of them are needed');
    assert.equal(policy.allows(caller({ scopes: ['admin', 'write'] }), 'tools', 'files/read'), true);
    assert.equal(policy.allows(caller({ tenant: 'other' }), 'prompts', 'crm/p'), true, 'no rule names prompts: visible');
  });

  it('onMissingScopes: challenge lists the item and asks for the caller\'s scopes and the rule\'s, unless a rule lets the caller in already', () => {
    // 2025-11-25/basic/authorization.mdx §Runtime Insufficient Scope Errors: 403 naming the scopes to step up to.
    const policy = new AccessPolicy([
      { access: 'allow', groups: ['ops'], scopes: ['crm:write'], onMissingScopes: 'challenge', tools: ['crm/delete_*', 'crm/update_*'] },
      { access: 'allow', subjects: ['root'], tools: ['crm/update_*'] },
      { access: 'allow', scopes: ['crm:admin'], tools: ['crm/purge'] },
      { access: 'deny', tools: ['crm/delete_all'] },
      { access: 'allow', tools: ['crm/get_*'] },
    ]);
    const op = caller({ groups: ['ops'], scopes: ['mcp:tools'] });
    assert.deepEqual(policy.decide(op, 'tools', 'crm/delete_user'), { scopes: ['mcp:tools', 'crm:write'] }, 'the granted scope is kept in the ask');
    assert.equal(policy.allows(op, 'tools', 'crm/delete_user'), true, 'listed, so the client knows it exists');
    assert.equal(policy.decide(caller({ groups: ['ops'], scopes: ['crm:write'] }), 'tools', 'crm/delete_user'), true);
    assert.deepEqual(policy.decide(op, 'tools', 'crm/delete_all'), { scopes: ['mcp:tools', 'crm:write'] }, 'with the scope, the challenge rule comes before the deny');
    assert.equal(policy.decide(caller({ groups: ['support'], scopes: ['mcp:tools'] }), 'tools', 'crm/delete_user'), false, 'another selector fails: hidden, no challenge');
    assert.equal(policy.decide(caller({ subject: 'root', groups: ['ops'] }), 'tools', 'crm/update_user'), true, 'a later rule allows the caller as it is');
    assert.equal(policy.decide(op, 'tools', 'crm/purge'), false, 'a rule without onMissingScopes hides (hide is the default)');
    assert.equal(policy.decide(op, 'tools', 'crm/get_user'), true);
  });

  it('subjects, prompts and resource URIs', () => {
    const policy = new AccessPolicy([
      { access: 'allow', subjects: ['key:ops'], prompts: ['*'], resources: ['*'] },
      { access: 'allow', resources: ['file:///public/*'] },
    ]);
    assert.equal(policy.allows(caller({ subject: 'key:ops' }), 'prompts', 'crm/summarize'), true);
    assert.equal(policy.allows(caller(), 'prompts', 'crm/summarize'), false);
    assert.equal(policy.allows(caller(), 'resources', 'file:///public/readme.md'), true);
    assert.equal(policy.allows(caller(), 'resources', 'file:///private/keys'), false);
    assert.equal(policy.allows(caller(), 'tools', 'crm/anything'), true, 'no rule names tools');
  });
});

describe('compileGlob', () => {
  it('* spans slashes, ? is one character, everything else is literal', () => {
    assert.ok(compileGlob('crm/*').test('crm/a/b'));
    assert.ok(compileGlob('a?c').test('abc'));
    assert.ok(!compileGlob('a?c').test('ac'));
    assert.ok(compileGlob('get.user').test('get.user'));
    assert.ok(!compileGlob('get.user').test('getXuser'), 'a dot is literal');
    assert.ok(!compileGlob('crm/(x)').test('crm/x'), 'parentheses are literal');
    assert.ok(compileGlob('crm/(x)').test('crm/(x)'));
  });
});
