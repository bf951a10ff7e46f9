// sha256Hex is the one-shot hash of the hot path (API keys, argument digests, the audit chain): it must give
// exactly what createHash gives, for every string the chain and the key hashes were made with before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { sha256Hex } from '../../../src/protocol/sha256.js';

test('sha256Hex equals createHash(sha256) of the UTF-8 text, for empty, ASCII, non-ASCII and long strings', () => {
  const samples = ['', 'gh_bench_0123456789abcdefghijklmnopqrstuvwx', 'héllo wörld ✓ 日本語 🙂', '\u0000\n"quoted"\\', 'x'.repeat(100_000), '\ud83d'];
  for (const s of samples) assert.equal(sha256Hex(s), createHash('sha256').update(s, 'utf8').digest('hex'), JSON.stringify(s.slice(0, 20)));
  assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'the FIPS 180-2 test vector');
});
