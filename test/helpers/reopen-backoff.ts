// Checking that Gatehouse backs off when an upstream keeps ending a stream it opens (a GET stream, a
// subscriptions/listen): the pause before each reopen starts at 1 s and doubles (up to 30 s), where it
// used to reopen every second for as long as the client listened.

import assert from 'node:assert/strict';

/**
 * Call once the stream has been opened the first time (`openedAt` holds that time, and collects each
 * reopen's). Watches 7.5 s: pauses of 1, 2 and 4 s give two or three more opens (every second would be
 * seven), each pause at least 1.6 times the one before. `what` names the stream in the messages.
 */
export async function assertReopenedAfterDoublingPauses(openedAt: number[], what: string): Promise<void> {
  const first = openedAt.length;
  await new Promise((r) => setTimeout(r, 7_500));
  const again = openedAt.length - first;
  assert.ok(again >= 2 && again <= 3, `${what} was opened again ${again} times in 7.5 s`);
  const gaps = openedAt.slice(1).map((t, i) => t - openedAt[i]!);
  for (let i = 1; i < gaps.length; i++) assert.ok(gaps[i]! >= gaps[i - 1]! * 1.6, `each pause about twice the last: ${gaps.map(Math.round).join(', ')} ms`);
}
