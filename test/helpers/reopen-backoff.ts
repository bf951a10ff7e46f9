// Checking that Gatehouse backs off when an upstream keeps ending a stream it opens (a GET stream, a
// subscriptions/listen): the pause before each reopen starts at 1 s and doubles (up to 30 s), where it
// used to reopen every second for as long as the client listened.

import assert from 'node:assert/strict';

/**
 * Call once the stream has been opened the first time (`openedAt` collects each open). Counts the opens
 * in the next 7.5 s: pauses of 1, 2 and 4 s give two or three more (every second would be seven, a load
 * that slows the gateway fewer, never more). The pauses themselves, one by one, are checked on a mocked
 * clock for the GET stream (test/unit/upstream/listen-hub.test.ts); the bridge's upstream listen has this
 * count only. `what` names the stream.
 */
export async function assertReopenedAfterDoublingPauses(openedAt: number[], what: string): Promise<void> {
  const first = openedAt.length;
  await new Promise((r) => setTimeout(r, 7_500));
  const again = openedAt.length - first;
  assert.ok(again >= 2 && again <= 3, `${what} was opened again ${again} times in 7.5 s: pauses of 1, 2 and 4 s give two or three`);
}
