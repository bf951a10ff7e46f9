// Globs from the config (access rules, selectors, idempotency lists, per-tool time limits; approval rules'
// argument values) are matched without a regular expression (src/policy/glob.ts). They must mean what the
// regular expressions they replace meant, and take time of the text's length, not of its length to the
// power of the stars: the texts are often a client's (a resource URI, an argument value).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { compileGlob } from '../../../src/policy/glob.js';

/** The regular expressions globs were until 3 December: the reference for what a glob means. */
function policyRegExp(glob: string): RegExp {
  return new RegExp(`^${glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`, 's');
}
function approvalRegExp(glob: string): RegExp {
  return new RegExp(`^${glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[\\s\\S]*')}$`, 'i');
}

/** A small deterministic generator (mulberry32), so a failure names its case. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick(next: () => number, alphabet: string, length: number): string {
  let s = '';
  for (let i = 0; i < length; i++) s += alphabet[Math.floor(next() * alphabet.length)];
  return s;
}

describe('compileGlob means what the regular expressions meant', () => {
  it('policy globs (* any run, newlines and slashes included; ? one character): 40,000 generated pairs agree', () => {
    const next = random(20261203);
    for (let i = 0; i < 40_000; i++) {
      const glob = pick(next, 'ab*?/.', Math.floor(next() * 8));
      const text = pick(next, 'ab/.\n', Math.floor(next() * 10));
      assert.equal(compileGlob(glob).test(text), policyRegExp(glob).test(text), `glob ${JSON.stringify(glob)}, text ${JSON.stringify(text)}`);
    }
  });

  it('approval values (* any run, ? itself, case ignored): 40,000 generated pairs agree', () => {
    const next = random(977);
    for (let i = 0; i < 40_000; i++) {
      const glob = pick(next, 'aB*?.', Math.floor(next() * 8));
      const text = pick(next, 'Ab?.\n', Math.floor(next() * 10));
      const ours = compileGlob(glob, { anyOne: false, ignoreCase: true }).test(text);
      assert.equal(ours, approvalRegExp(glob).test(text), `glob ${JSON.stringify(glob)}, text ${JSON.stringify(text)}`);
    }
  });

  it('named cases', () => {
    assert.ok(compileGlob('*').test(''));
    assert.ok(compileGlob('**').test('anything'));
    assert.ok(!compileGlob('').test('x'));
    assert.ok(compileGlob('a*a').test('aa'));
    assert.ok(!compileGlob('a*a').test('a'), 'the anchored pieces may not overlap');
    assert.ok(compileGlob('a?*?a').test('abba'));
    assert.ok(!compileGlob('a??').test('a'), '? needs a character to stand for');
    assert.ok(compileGlob('file:///*/*.txt').test('file:///a/b/c.txt'));
    assert.ok(!compileGlob('file:///*/*.txt').test('file:///a.txt'));
    assert.ok(compileGlob('*PROD*', { anyOne: false, ignoreCase: true }).test('eu-prod-1'));
    assert.ok(!compileGlob('a?c', { anyOne: false }).test('abc'), 'an approval value\'s ? is itself');
    assert.ok(compileGlob('a?c', { anyOne: false }).test('a?c'));
  });
});

/**
 * Runs `code` in a child process stopped after 30 s: a synchronous match cannot be interrupted in-process,
 * so this is how a test of it can end (it is a hang detector, not a timing assertion).
 */
function runBounded(code: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', '-e', code], { timeout: 30_000, cwd: process.cwd() }, (err, stdout) => (err ? reject(err) : resolve(stdout.trim())));
  });
}

describe('matching takes time of the text, whatever the stars', () => {
  it('an access rule on resources against a 1 MB URI that does not match, and an approval value against 1 MB of argument', { timeout: 60_000 }, async () => {
    // As regular expressions: the access rule took 55 s on an 8 KB URI (cubic), the approval value 0.4 s on 40 KB (quadratic).
    const out = await runBounded(`
      import { AccessPolicy } from './src/policy/access.ts';
      import { compileApprovalRules } from './src/approvals/rules.ts';
      const policy = new AccessPolicy([{ id: 'files', access: 'allow', resources: ['file:///*/*/*.txt'] }]);
      const caller = { subject: 'alice', scopes: [], groups: [], via: 'jwt' };
      const uri = 'file:///' + 'a/'.repeat(512 * 1024);
      const allowed = policy.allows(caller, 'resources', uri);
      const [rule] = compileApprovalRules([{ id: 'prod', by: 'reviewer', reviewers: { subjects: [], groups: [] }, deadlineSeconds: 60, reuse: 1, arguments: { env: '*prod*x' } }]);
      const held = rule.matchesArguments({ env: 'prod'.repeat(256 * 1024) });
      console.log(JSON.stringify({ allowed, held }));
    `);
    assert.deepEqual(JSON.parse(out), { allowed: false, held: false });
  });
});
