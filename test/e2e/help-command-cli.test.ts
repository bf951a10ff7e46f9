// `gatehouse help serve` (the git and npm habit) printed the general help, as if the word after `help` were
// not there; `gatehouse help frobnicate` too, with exit 0. It now prints that command's help, the same as
// `gatehouse serve --help`, and an unknown command is a usage error (exit 2), as everywhere else.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';

describe('gatehouse help COMMAND', () => {
  for (const command of ['serve', 'check-config', 'hash-key', 'doctor', 'audit', 'budgets', 'approvals', 'pins']) {
    it(`help ${command} prints what ${command} --help prints`, async () => {
      const [viaHelp, viaFlag] = await Promise.all([runCli(['help', command]), runCli([command, '--help'])]);
      assert.equal(viaHelp.code, 0, viaHelp.stderr);
      assert.equal(viaHelp.stdout, viaFlag.stdout);
      assert.match(viaHelp.stdout, new RegExp(`^Usage: gatehouse ${command}`));
    });
  }

  it('help of an unknown command exits 2 and names it; help alone is the general help', async () => {
    const r = await runCli(['help', 'frobnicate']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^unknown command "frobnicate"/);
    const general = await runCli(['help']);
    assert.equal(general.code, 0);
    assert.match(general.stdout, /^gatehouse: an MCP gateway/);
  });
});
