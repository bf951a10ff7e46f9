// A change written to a gateway's watched config file is taken by whichever look sees it first: the
// watcher's own poll (once a second) or `checkConfigFile()` (as SIGHUP asks). Under load the poll can take
// it first, and `checkConfigFile()` then answers 'unchanged' for a change that was applied all the same, so
// a test that asserts 'changed' races the poll. What a test can assert whichever look took the change is
// what the reload did: its log line, its count, its effect.

import assert from 'node:assert/strict';
import type { Gateway } from '../../src/gateway.js';
import { waitUntil } from './stdio-children.js';

/**
 * Asks the gateway to look at its config file now, then waits (at most `timeoutMs`) until `reloaded`
 * holds: the outcome of the reload the change brought, by the poll or by this look. Answers whether it did.
 */
export async function reloadTaken(gateway: Gateway, reloaded: () => boolean, timeoutMs = 10_000): Promise<boolean> {
  // 'unchanged': the poll took the change first; 'changed': this look did. Either way a reload follows.
  assert.match(await gateway.checkConfigFile(), /^(changed|unchanged)$/);
  return waitUntil(reloaded, timeoutMs);
}
