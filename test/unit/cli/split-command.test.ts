import { test } from 'node:test';
import assert from 'node:assert/strict';
import { splitCommand } from '../../../src/cli/split-command.js';

test('splits words like a POSIX shell, without running one', () => {
  assert.deepEqual(splitCommand('npx -y @scope/pkg'), ['npx', '-y', '@scope/pkg']);
  assert.deepEqual(splitCommand(`node "my server.js" 'a b' c\\ d ""`), ['node', 'my server.js', 'a b', 'c d', '']);
  assert.deepEqual(splitCommand('echo "say \\"hi\\"" $HOME'), ['echo', 'say "hi"', '$HOME']);
  assert.deepEqual(splitCommand('  spaced   out  '), ['spaced', 'out']);
});

test('an unterminated quote is an error', () => {
  assert.throws(() => splitCommand('node "oops'), /unterminated " quote/);
});
