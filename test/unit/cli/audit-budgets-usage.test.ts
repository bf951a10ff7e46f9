// `gatehouse audit` and `gatehouse budgets` refuse a flag value they cannot use as a usage error (exit 2,
// with the usage), as an unknown option, `audit verify --head zz`, `doctor --timeout-ms abc` and every
// `serve` flag already are. Before, `--store redis://…`, `--since 2026-02-30` and `--interval-ms 5` exited 1,
// the status of a broken chain or an unreadable store (the --store one after the e2e test asserting it), and
// `--since`/`--interval-ms` were judged only once the store had been opened, so a wrong path hid them.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { describe, it } from 'node:test';
import { auditCommand } from '../../../src/cli/audit.js';
import { budgetsCommand } from '../../../src/cli/budgets.js';
import type { CommandIO } from '../../../src/cli/io.js';

async function run(command: (args: string[], io: CommandIO) => Promise<number>, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await command(args, { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

// No such file: every case is refused before a store is looked for.
const NOWHERE = join(tmpdir(), `gatehouse-no-store-${process.pid}.db`);

describe('audit and budgets usage errors', () => {
  const cases: Array<{ name: string; command: (args: string[], io: CommandIO) => Promise<number>; args: string[]; first: RegExp; usage: RegExp }> = [
    { name: 'audit verify --store redis://…', command: auditCommand, args: ['verify', '--store', 'redis://:pw@127.0.0.1:6379'], first: /^--store takes the path of a SQLite file, not a URL \(redis:\/\/…\)/, usage: /Usage: gatehouse audit/ },
    { name: 'audit export --since 2026-02-30', command: auditCommand, args: ['export', '--store', NOWHERE, '--since', '2026-02-30'], first: /^--since "2026-02-30" is not a date or time/, usage: /Usage: gatehouse audit/ },
    { name: 'audit export --until soon', command: auditCommand, args: ['export', '--store', NOWHERE, '--until', 'soon'], first: /^--until "soon" is not a date or time/, usage: /Usage: gatehouse audit/ },
    // Judged before the store is looked for, as the README says: it was judged only once the store was open (exit 1 for a missing one).
    { name: 'audit verify --head zz', command: auditCommand, args: ['verify', '--store', NOWHERE, '--head', 'zz'], first: /^--head "zz" is not a SHA-256 hash \(64 hex digits, as verify prints it\)$/, usage: /Usage: gatehouse audit/ },
    { name: 'audit tail --interval-ms 5', command: auditCommand, args: ['tail', '--store', NOWHERE, '--interval-ms', '5'], first: /^--interval-ms "5" must be a whole number of milliseconds from 50 to 60000$/, usage: /Usage: gatehouse audit/ },
    { name: 'budgets show --store redis://…', command: budgetsCommand, args: ['show', '--store', 'redis://:pw@127.0.0.1:6379'], first: /^--store takes the path of a SQLite file, not a URL \(redis:\/\/…\)/, usage: /Usage: gatehouse budgets/ },
  ];
  for (const c of cases) {
    it(`${c.name} exits 2 with the flag named and the usage`, async () => {
      const r = await run(c.command, ...c.args);
      assert.equal(r.code, 2, r.err);
      assert.equal(r.out, '');
      assert.match(r.err.split('\n')[0]!, c.first);
      assert.match(r.err, c.usage);
      assert.doesNotMatch(r.err, /pw@/, 'the URL is not echoed');
    });
  }

  it('a store that is not there is still a failure (exit 1), not usage', async () => {
    const r = await run(auditCommand, 'verify', '--store', NOWHERE);
    assert.equal(r.code, 1);
    assert.match(r.err, /no store at/);
  });

  it('the help of each says what its exit statuses mean', async () => {
    assert.match((await run(auditCommand, '--help')).out, /Exit status: 0 .*1 .*2 usage/s);
    assert.match((await run(budgetsCommand, '--help')).out, /Exit status: 0 .*1 .*2 usage/s);
  });
});
