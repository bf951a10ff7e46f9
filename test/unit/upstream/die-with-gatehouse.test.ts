// Which stdio commands are started through setpriv (so they die with Gatehouse) and which as they are: one
// setpriv could not exec is spawned as it is, so its failure stays the spawn error it was (ENOENT, EACCES).
// This machine has util-linux's setpriv (Debian, as the image's base), which the probe must find usable.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { enableDeathWithGatehouse, launchOf, warnIfNoDeathSignal } from '../../../src/upstream/die-with-gatehouse.js';
import { createLogger } from '../../../src/log/logger.js';

const log = createLogger('error');
const nodeDir = dirname(process.execPath);

test("the probe finds setpriv usable here, and a command found on the child's PATH goes through it unchanged", async () => {
  assert.equal(await enableDeathWithGatehouse(), undefined);
  const launch = launchOf('node', ['server.js', '--flag'], { PATH: nodeDir }, undefined, log);
  assert.match(launch.file, /\/setpriv$/);
  assert.deepEqual(launch.args, ['--pdeathsig', 'KILL', '--', 'node', 'server.js', '--flag']);
});

test('a command setpriv could not exec is spawned as it is', async () => {
  assert.equal(await enableDeathWithGatehouse(), undefined);
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-launch-'));
  // Not on the child's PATH (which is the child's own, not Gatehouse's).
  assert.deepEqual(launchOf('node', ['a'], { PATH: dir }, undefined, log), { file: 'node', args: ['a'] });
  assert.deepEqual(launchOf(join(dir, 'absent'), [], {}, undefined, log), { file: join(dir, 'absent'), args: [] });
  // A relative path is the working directory's: there but not executable, then executable.
  writeFileSync(join(dir, 'server.sh'), '#!/bin/sh\n');
  assert.deepEqual(launchOf('./server.sh', [], {}, dir, log), { file: './server.sh', args: [] });
  chmodSync(join(dir, 'server.sh'), 0o755);
  assert.deepEqual(launchOf('./server.sh', [], {}, dir, log).args, ['--pdeathsig', 'KILL', '--', './server.sh']);
  // A directory is no command.
  assert.deepEqual(launchOf(dir, [], {}, undefined, log), { file: dir, args: [] });
});

test('without a usable setpriv, commands start as they are and the first one warns, once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-launch-'));
  // An older util-linux, which has no --pdeathsig, refuses the option.
  const old = join(dir, 'setpriv');
  writeFileSync(old, "#!/bin/sh\necho \"setpriv: unrecognized option '--pdeathsig'\" >&2\nexit 1\n");
  chmodSync(old, 0o755);
  assert.match((await enableDeathWithGatehouse([old])) ?? '', /--pdeathsig KILL does not work here/);
  assert.match((await enableDeathWithGatehouse([join(dir, 'absent')])) ?? '', /^no setpriv \(util-linux\) at /);
  const lines: string[] = [];
  const warnings = createLogger('warn', (line) => lines.push(line));
  assert.deepEqual(launchOf('node', ['a'], { PATH: nodeDir }, undefined, warnings), { file: 'node', args: ['a'] });
  launchOf('node', ['b'], { PATH: nodeDir }, undefined, warnings);
  warnIfNoDeathSignal(warnings);
  assert.equal(lines.length, 1, lines.join(''));
  const warning = JSON.parse(lines[0]!) as { level: string; msg: string; reason: string };
  assert.equal(warning.level, 'warn');
  assert.match(warning.msg, /start without a parent-death signal/);
  assert.match(warning.reason, /^no setpriv/);
});
