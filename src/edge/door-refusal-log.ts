// Connections refused at the door, before any request is parsed (the per-address connection cap, HTTP that
// Node's parser refuses, CONNECT), have no call to log a `request refused` line for: metrics counted them,
// and the log said nothing above debug, so an operator tailing it could not see a flood being turned away.
// They are told here as warn lines, summed: at most one line per reason per window, carrying how many were
// refused in it. A flood of refusals is then a line every few seconds, never a line per connection, and a
// quiet door costs nothing (no timer runs while nothing is refused).

import type { Logger } from '../log/logger.js';

/** How long refusals are summed before their line is written. */
export const DOOR_REFUSAL_WINDOW_MS = 10_000;

export class DoorRefusalLog {
  /** Refusals since the last lines, by reason. */
  private readonly counts = new Map<string, number>();
  /** Runs while refusals wait to be told; undefined when none do. */
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: Logger,
    private readonly windowMs = DOOR_REFUSAL_WINDOW_MS,
  ) {}

  refused(reason: string): void {
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + 1);
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => this.tell(), this.windowMs);
    // A process that is otherwise done does not wait for a summary; close() tells what is pending.
    this.timer.unref();
  }

  /** Tells the refusals still waiting for their window to end, so a stop does not lose them. */
  close(): void {
    clearTimeout(this.timer);
    this.tell();
  }

  private tell(): void {
    this.timer = undefined;
    for (const [reason, count] of this.counts) {
      this.log.warn('connections refused before any request was read', { reason, count, windowSeconds: this.windowMs / 1000 });
    }
    this.counts.clear();
  }
}
