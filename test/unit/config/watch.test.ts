// Unit tests for src/config/watch.ts and referencedFiles (interpolate.ts): the watched file, and the files it
// reads through ${file:PATH}, so that a rotated secret reloads the config although its text is unchanged.

import assert from 'node:assert/strict';
import { mkdtemp, rm, truncate, writeFile, unlink, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { referencedFiles } from '../../../src/config/interpolate.js';
import { watchConfigFile } from '../../../src/config/watch.js';

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-watch-'));
});
after(async () => rm(dir, { recursive: true, force: true }));

describe('referencedFiles', () => {
  it('lists each ${file:PATH} once, resolved against the base directory; env, escapes and bad forms are not files', () => {
    const text = [
      'a: "${file:secrets/token}"',
      'b: "Bearer ${file:/run/secrets/key} and ${file:secrets/token}"',
      'c: "${env:HOME}"',
      'd: "$${file:literal}"',
      'e: "${file:}"',
      'f: "${file:secrets/open"',
    ].join('\n');
    assert.deepEqual(referencedFiles(text, '/etc/gatehouse'), ['/etc/gatehouse/secrets/token', '/run/secrets/key']);
    assert.deepEqual(referencedFiles('upstreams: []', '/etc/gatehouse'), []);
  });

  it('reads the parsed values as a load does: comments and keys name nothing, YAML escapes and folding are resolved', () => {
    const text = [
      '# headers: { Authorization: "${file:commented-out}" }',
      'a: "${file:tok\\x65n}"', // a double-quoted escape: the load reads "token"
      "b: '${file:single''quoted}'", // '' is one quote in a single-quoted scalar
      'c: >-',
      '  ${file:folded}',
      '"${file:as-a-key}": value',
      'd: &anchor "${file:anchored}"',
      'e: *anchor',
    ].join('\n');
    assert.deepEqual(referencedFiles(text, '/etc/gatehouse'), ['/etc/gatehouse/token', "/etc/gatehouse/single'quoted", '/etc/gatehouse/folded', '/etc/gatehouse/anchored']);
  });
});

describe('watchConfigFile', () => {
  /** Waits (bounded) for the next change the watcher reports. */
  function changes(): { next(): Promise<{ text: string; changed: string[] } | undefined>; onChange: (text: string, changed: string[]) => void } {
    const seen: Array<{ text: string; changed: string[] }> = [];
    return {
      onChange: (text, changed) => seen.push({ text, changed }),
      async next() {
        for (let i = 0; i < 50 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
        return seen.shift();
      },
    };
  }

  it('reports a change of a file the config reads, naming it, while the config text stays the same', async () => {
    const config = join(dir, 'rotate.yaml');
    const secret = join(dir, 'token');
    await writeFile(secret, 'first-secret-value\n');
    await writeFile(config, 'upstreams: [{ name: up, url: "http://127.0.0.1:1/mcp", headers: { authorization: "Bearer ${file:token}" } }]\n');
    const seen = changes();
    // A long interval: the looks below are the test's own (checkNow), as SIGHUP asks for them.
    const watcher = watchConfigFile(config, seen.onChange, { intervalMs: 60_000 });
    try {
      assert.equal(await watcher.checkNow(), 'unchanged');
      // Rotated the way a Secret volume does it: a new file renamed over the old.
      await writeFile(`${secret}.new`, 'second-secret-value\n');
      await rename(`${secret}.new`, secret);
      assert.equal(await watcher.checkNow(), 'changed');
      const change = await seen.next();
      assert.deepEqual(change?.changed, [secret]);
      assert.match(change!.text, /\$\{file:token\}/);
      assert.equal(await watcher.checkNow(), 'unchanged', 'one change is reported once');

      // A secret file that goes missing is a change, and so is its return.
      await unlink(secret);
      assert.equal(await watcher.checkNow(), 'changed');
      assert.deepEqual((await seen.next())?.changed, [secret]);
      await writeFile(secret, 'third-secret-value\n');
      assert.equal(await watcher.checkNow(), 'changed');
      assert.deepEqual((await seen.next())?.changed, [secret]);

      // The config file's own change names the config file.
      await writeFile(config, 'upstreams: [{ name: up, url: "http://127.0.0.1:2/mcp", headers: { authorization: "Bearer ${file:token}" } }]\n');
      assert.equal(await watcher.checkNow(), 'changed');
      assert.deepEqual((await seen.next())?.changed, [config]);
    } finally {
      watcher.stop();
    }
  });

  it('does not report a file the config no longer reads, nor an unreadable config file', async () => {
    const config = join(dir, 'dropped.yaml');
    const secret = join(dir, 'dropped-token');
    await writeFile(secret, 'one-secret-value');
    await writeFile(config, 'admin: { token: "${file:dropped-token}" }\n');
    const seen = changes();
    const watcher = watchConfigFile(config, seen.onChange, { intervalMs: 60_000 });
    try {
      assert.equal(await watcher.checkNow(), 'unchanged');
      await writeFile(config, 'admin: { enabled: false }\n');
      assert.equal(await watcher.checkNow(), 'changed');
      assert.deepEqual((await seen.next())?.changed, [config]);
      await writeFile(secret, 'another-secret-value');
      assert.equal(await watcher.checkNow(), 'unchanged');
      await unlink(config);
      assert.equal(await watcher.checkNow(), 'unreadable');
    } finally {
      watcher.stop();
    }
  });

  // Until 5 December each look read the config file whole, whatever its size, every second.
  it('takes a config file past 4 MiB for unreadable, leaving the running config, without reading it', async () => {
    const config = join(dir, 'growing.yaml');
    await writeFile(config, 'admin: { enabled: false }\n');
    const seen = changes();
    const watcher = watchConfigFile(config, seen.onChange, { intervalMs: 60_000 });
    try {
      assert.equal(await watcher.checkNow(), 'unchanged');
      await truncate(config, 4 * 1024 * 1024 + 1);
      assert.equal(await watcher.checkNow(), 'unreadable');
      await truncate(config, 0);
      await writeFile(config, 'admin: { enabled: false }\n');
      assert.equal(await watcher.checkNow(), 'unchanged', 'back as it was: no change to report');
    } finally {
      watcher.stop();
    }
  });
});
