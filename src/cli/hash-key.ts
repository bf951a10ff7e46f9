// `gatehouse hash-key`: prints the hash to store in auth.apiKeys.

import { parseArgs } from 'node:util';
import { generateKey, hashKey, KEY_PREFIX, sendableAsBearer } from '../auth/key-hash.js';
import { HASH_KEY_HELP } from './help.js';
import type { CommandIO } from './io.js';

export async function hashKeyCommand(args: string[], io: CommandIO): Promise<number> {
  // Parsed strictly: an unknown option taken as the key would print a hash an operator might paste into
  // auth.apiKeys for a key nobody holds. A key that starts with "-" goes after "--".
  let parsed;
  try {
    parsed = parseArgs({ args, options: { help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: true });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${HASH_KEY_HELP}`);
    return 2;
  }
  if (parsed.values.help) {
    io.out(HASH_KEY_HELP);
    return 0;
  }
  if (parsed.positionals.length > 1) {
    io.err('hash-key takes at most one argument (the key, or "-" to read it from stdin)\n');
    return 2;
  }
  const arg = parsed.positionals[0];
  if (arg === undefined) {
    const key = generateKey();
    io.out(`key:  ${key}\nhash: ${hashKey(key)}\n`);
    return 0;
  }
  const key = arg === '-' ? (await io.readStdin()).replace(/\r?\n$/, '') : arg;
  if (key.length < 16) {
    io.err('refusing to hash a key shorter than 16 characters: use a long random key (run hash-key with no argument)\n');
    return 1;
  }
  // Its hash would name a key no client can present: the edge takes credentials from the header only.
  if (!sendableAsBearer(key)) {
    io.err('refusing to hash a key that "Authorization: Bearer <key>" cannot carry (RFC 6750 b64token): use letters, digits and - . _ ~ + / only, with = only at the end, and no spaces (run hash-key with no argument for a new key)\n');
    return 1;
  }
  io.out(hashKey(key) + '\n');
  // Only gh_ keys, and those of auth.apiKeyPrefixes, are known as keys when they match none: with OAuth on,
  // any other mistyped or revoked key is taken for a token and sent to introspection. The config holds only
  // hashes, so the prefix must be declared; said on stderr, where a stdout piped into a config is untouched.
  // The key is not echoed, nor a guess at its prefix (part of a secret).
  if (!key.startsWith(KEY_PREFIX)) io.err(KEY_PREFIX_NOTE);
  return 0;
}

const KEY_PREFIX_NOTE = `note: this key does not start with ${KEY_PREFIX}, the prefix Gatehouse knows its own keys by. With auth.oauth on,
list the prefix your keys start with (e.g. acme_live_) in auth.apiKeyPrefixes: otherwise a mistyped or
revoked key of this shape is taken for an access token (and with oauth.introspection, sent to the
authorization server).
`;
