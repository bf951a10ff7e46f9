// `gatehouse approvals` flags a command cannot use are usage errors (README §CLI: "A flag value a command
// cannot use … is a usage error: exit 2, naming the flag, with the usage, in every command"). `--state
// pendng` went to the admin API as it was, and came back a refusal, exit 1 (or, with the gateway down, "cannot
// be reached", which hid the typo); `--state` on approve or reject, and `--reason` on list or show, were
// dropped without a word, so a reviewer believed a reason recorded that was not. All exit 2 before any call.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';

// Nothing listens there: a command that got as far as calling would say it cannot be reached (exit 1).
const TARGET = ['--url', 'http://127.0.0.1:9', '--token', '0123456789abcdef0123'];

describe('gatehouse approvals flag values it cannot use', () => {
  const cases: Array<[string[], RegExp]> = [
    [['list', '--state', 'pendng'], /^--state: "pendng" is not a state; use pending, approved, rejected, expired, used or all$/m],
    [['approve', 'a1', '--state', 'approved'], /^--state applies to list only$/m],
    [['show', 'a1', '--reason', 'looks fine'], /^--reason applies to approve and reject only$/m],
    [['list', '--reason', 'x'], /^--reason applies to approve and reject only$/m],
  ];
  for (const [args, said] of cases) {
    it(`approvals ${args.join(' ')} exits 2 with the usage, before any call`, async () => {
      const r = await runCli(['approvals', ...args, ...TARGET], { env: { PATH: process.env.PATH } });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, said);
      assert.match(r.stderr, /Usage: gatehouse approvals/);
      assert.doesNotMatch(r.stderr, /cannot be reached/);
    });
  }

  it('a state it knows still goes to the admin API (here: not reachable, exit 1)', async () => {
    const r = await runCli(['approvals', 'list', '--state', 'all', ...TARGET], { env: { PATH: process.env.PATH } });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot be reached/);
  });
});
