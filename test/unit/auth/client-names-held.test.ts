// Member names a client chose are judged (is it a credential's name? does it name a secret field?) and the
// verdicts memoised, as the same few names recur on every request. The memo was bounded in count only, so
// each of 10,000 requests (unauthenticated ones too: a credential in the body is looked for before the
// caller is refused) could leave a name of most of a megabyte in it: gigabytes held for the life of the
// process. Names are now remembered only when short. Measured in a child process with `--expose-gc`:
// 1,000 names of 64 KB judged, what the heap still holds after a full collection.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';

const MEASURE = `
  import { credentialInMessage, credentialInQuery } from './src/auth/credential-locations.ts';
  import { mayHoldSecrets, redactValue } from './src/log/logger.ts';
  const judge = {
    message: (name) => credentialInMessage(JSON.parse('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"' + name + '":1}}')),
    query: (name) => credentialInQuery('/mcp?' + name.slice(0, 8 * 1024) + '=1'),
    audit: (name) => mayHoldSecrets(JSON.parse('{"' + name + '":"v"}')),
    preview: (name) => redactValue(JSON.parse('{"' + name + '":"v"}')),
  }[process.argv.at(-1)];
  globalThis.gc(); globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < 1000; i++) judge(String(i).padStart(8, '0') + 'x'.repeat(64 * 1024));
  globalThis.gc(); globalThis.gc();
  console.log(Math.round((process.memoryUsage().heapUsed - before) / 1e6));
`;

function heldMb(which: string): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', '--import', 'tsx', '--input-type=module', '-e', MEASURE, which], { timeout: 60_000 }, (err, stdout) => (err ? reject(err) : resolve(Number(stdout.trim()))));
  });
}

for (const [which, what] of [
  ['message', 'a member name in a JSON-RPC message (credentialInMessage)'],
  ['query', 'a query parameter name (credentialInQuery)'],
  ['audit', "an argument name in an audited call (the audit's secret scan)"],
  ['preview', "an argument name in an approval's preview (redactValue)"],
] as const) {
  test(`${what}: 1,000 names of 64 KB leave nothing held`, { timeout: 90_000 }, async () => {
    const held = await heldMb(which);
    // Without the bound: about 65 MB (the query's names, cut to 8 KB by the header limit: about 8).
    assert.ok(held < (which === 'query' ? 4 : 16), `${held} MB still held`);
  });
}
