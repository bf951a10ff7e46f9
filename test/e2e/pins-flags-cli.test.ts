// `gatehouse pins accept REF --all` (an operator hoping to accept every change at once) accepted the one ref
// and dropped --all without a word; `pins show REF --all` dropped it too. --all is list's only (README §CLI: a
// flag a command cannot use is a usage error, exit 2, naming the flag, with the usage), said before any call.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';

// Nothing listens there: a command that got as far as calling would say it cannot be reached (exit 1).
const TARGET = ['--url', 'http://127.0.0.1:9', '--token', '0123456789abcdef0123'];

describe('gatehouse pins --all outside list', () => {
  for (const args of [['accept', 'crm/search', '--all'], ['show', 'crm/search', '--all']]) {
    it(`pins ${args.join(' ')} exits 2 with the usage, before any call`, async () => {
      const r = await runCli(['pins', ...args, ...TARGET], { env: { PATH: process.env.PATH } });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /^--all applies to list only \(accept takes one REF at a time, after looking at it with show\)$/m);
      assert.match(r.stderr, /Usage: gatehouse pins/);
    });
  }

  it('pins list --all still goes to the admin API (here: not reachable, exit 1)', async () => {
    const r = await runCli(['pins', 'list', '--all', ...TARGET], { env: { PATH: process.env.PATH } });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot be reached/);
  });
});
