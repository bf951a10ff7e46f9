// `gatehouse serve` usage errors exit 2, as every other command's do (help.ts: "Exit status: … 2 usage";
// doctor, audit and budgets refuse a bad flag value with 2), and name the flag the user typed. Before, only
// an unknown option or a missing value exited 2: a value the command could not use (--port abc, --log-level
// loud, --upstream and --stdio together, --store redis://…) exited 1, as a broken config file does, and one
// the schema refused was labelled as a config file's line and column that do not exist:
// "command line:0:0 log.level: must be one of: …". A broken config file still exits 1, located in the file.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { serveCommand } from '../../../src/cli/serve.js';

/** Runs `serve` in-process; every case below is refused before anything is opened or listened on. */
async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await serveCommand(args, { out: (t) => out.push(t), err: (t) => err.push(t), readStdin: async () => '', env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

const UP = 'http://127.0.0.1:9/mcp';
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-serve-usage-'));
const good = join(dir, 'good.yaml');
writeFileSync(good, `upstreams: [{ name: a, url: "${UP}" }]\nauth: { anonymous: true }\nstore: { kind: sqlite, path: ${JSON.stringify(join(dir, 'g.db'))} }\n`);
const bad = join(dir, 'bad.yaml');
writeFileSync(bad, `upstreams: [{ name: a, url: "${UP}" }]\nauth: { anonymous: true }\nlog: { level: loud }\n`);

describe('gatehouse serve usage errors', () => {
  const cases: Array<{ args: string[]; first: RegExp }> = [
    // Refused by the parser already (these exited 2 before too).
    { args: ['--bogus'], first: /^Unknown option '--bogus'/ },
    { args: ['--port'], first: /^Option '--port <value>' argument missing/ },
    // Values serve itself cannot use.
    { args: ['--upstream', UP, '--port', 'abc'], first: /^--port must be a number, got "abc"$/ },
    { args: ['--upstream', UP, '--stdio', 'server'], first: /^use either --upstream or --stdio, not both$/ },
    { args: ['--config', good, '--upstream', UP], first: /^use either --config or --upstream\/--stdio, not both$/ },
    { args: ['--stdio', '"server --flag'], first: /^--stdio: unterminated " quote in command$/ },
    { args: ['--upstream', UP, '--store', 'redis://127.0.0.1:6379'], first: /^--store takes the path of a SQLite file, not a URL/ },
    // Values the config schema refuses: named by their flag, not by a line and column of no file.
    { args: ['--upstream', UP, '--log-level', 'loud'], first: /^--log-level: must be one of: debug, info, warn, error$/ },
    { args: ['--upstream', UP, '--port', '99999'], first: /^--port: must be at most 65535$/ },
    { args: ['--upstream', UP, '--path', 'mcp'], first: /^--path: must start with "\/"$/ },
    { args: ['--upstream', UP, '--host', ''], first: /^--host: must not be empty$/ },
    { args: ['--upstream', 'ftp://127.0.0.1/mcp'], first: /^--upstream: must be an http:\/\/ or https:\/\/ URL$/ },
    { args: ['--stdio', ''], first: /^--stdio: must not be empty$/ },
    // Trying a server out runs it without authentication: a non-loopback --host is the flag's problem, not
    // an "auth.anonymous" key the user never wrote.
    { args: ['--upstream', UP, '--host', '0.0.0.0'], first: /^--host: a server tried out with --upstream or --stdio is served without authentication, so only on a loopback address .*not on "0\.0\.0\.0"; to serve it on another, write a config file with auth\.apiKeys or auth\.oauth$/ },
    // A flag overriding a config file's key is the flag's problem, not the file's.
    { args: ['--config', good, '--port', '70000'], first: /^--port: must be at most 65535$/ },
    { args: ['--config', good, '--log-level', 'loud'], first: /^--log-level: must be one of: debug, info, warn, error$/ },
  ];
  for (const { args, first } of cases) {
    it(`serve ${args.join(' ')} exits 2 with the flag named and the usage`, async () => {
      const r = await run(...args);
      assert.equal(r.code, 2, r.err);
      assert.equal(r.out, '');
      const [line, ...rest] = r.err.split('\n');
      assert.match(line!, first);
      assert.doesNotMatch(r.err, /command line:\d+:\d+/);
      assert.match(rest.join('\n'), /Usage: gatehouse serve \[options\]/);
    });
  }

  it('a config file the schema refuses is a config error (exit 1), located in the file, without the usage', async () => {
    const r = await run('--config', bad);
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /^.*bad\.yaml:3:\d+ log\.level: must be one of: debug, info, warn, error$/m);
    assert.doesNotMatch(r.err, /Usage:/);
  });

  it('the help says what each exit status means', async () => {
    const r = await run('--help');
    assert.equal(r.code, 0);
    assert.match(r.out, /Exit status: 0 .*1 .*2 usage/s);
  });
});
