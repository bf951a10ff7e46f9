// A tool schema's patterns are compiled without `u` unless they need it (src/policy/schema-patterns.ts), so
// V8's linear-engine fallback (which that module turns on) can take over a pattern that backtracks
// without end on a client's text.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { schemaPattern } from '../../../src/policy/schema-patterns.js';

describe('schemaPattern', () => {
  it('keeps `u` for what needs it, and means what the `u` pattern means on text of the Basic Multilingual Plane', () => {
    assert.equal(schemaPattern('^(a+)+$', 'u').flags, '');
    assert.equal(schemaPattern('^\\p{L}+$', 'u').flags, 'u');
    assert.equal(schemaPattern('^\\u{1F600}$', 'u').flags, 'u');
    assert.equal(schemaPattern('^😀+$', 'u').flags, 'u');
    assert.equal(schemaPattern('^(a+)+$', '').flags, '', "Ajv's own choice of no `u` stands");
    const cases: Array<[string, string[]]> = [
      ['^[a-z0-9-]{3,63}$', ['abc-1', 'ab', 'ABC', 'é']],
      ['^\\d{4}-\\d{2}-\\d{2}$', ['2026-12-03', '2026-1-03']],
      ['^(?<user>[^@\\s]+)@[^@\\s]+\\.[a-z]{2,}$', ['a@b.io', 'a b@c.io', '@x.io']],
      ['^[\\w.]+$', ['a.b_c', 'a-b', 'ü']],
      ['^.{2}$', ['ab', 'é!', 'abc']],
    ];
    for (const [pattern, texts] of cases) {
      for (const text of texts) assert.equal(schemaPattern(pattern, 'u').test(text), new RegExp(pattern, 'u').test(text), `${pattern} on ${text}`);
    }
  });

  it('a pattern valid only in Unicode mode is compiled in it', () => {
    // `\-` outside a class is an error with `u` and an identity escape without; `(?<a>.)\k<a>` is fine both ways.
    assert.equal(schemaPattern('^a\\-b$', 'u').test('a-b'), true);
    assert.equal(schemaPattern('^(?<a>.)\\k<a>$', 'u').test('xx'), true);
  });

  it('a pattern that backtracks exponentially ends on 40,000 characters (in a child process stopped after 30 s)', { timeout: 60_000 }, async () => {
    const code = `
      import { schemaPattern } from './src/policy/schema-patterns.ts';
      console.log(JSON.stringify([schemaPattern('^(a+)+$', 'u').test('a'.repeat(40000) + '!'), schemaPattern('^(\\\\w+\\\\s?)*$', 'u').test('word '.repeat(8000) + '!')]));
    `;
    const out = await new Promise<string>((resolve, reject) => execFile(process.execPath, ['--import', 'tsx', '-e', code], { timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout.trim()))));
    assert.deepEqual(JSON.parse(out), [false, false]);
  });
});
