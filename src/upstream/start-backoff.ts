// The backoff between tries to start a new `perSession` child for a client's initialize after earlier
// tries failed (the command is not installed, the child exits at start, it never answers its initialize).
// Each failure in a row doubles the wait before the next try (`restart.firstDelayMs`); past
// `restart.attempts` of them, initializes are refused at once until the longest wait has passed
// (2026-07-28/basic/transports/stdio.mdx §Unexpected Termination: restart with exponential backoff). The
// shared child's own count is StdioMessages.backoff, with the same rule.

import type { StdioUpstreamConfig } from '../config/types.js';
import { GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';

export class StartBackoff {
  /** Tries that failed since the last child that answered its initialize. */
  private failures = 0;
  private lastFailureAt = 0;

  constructor(
    private readonly upstream: string,
    private readonly restart: StdioUpstreamConfig['restart'],
    private readonly log: Logger,
  ) {}

  /** Waits out the backoff before a try; rejects at once while tries are suspended after `restart.attempts`. */
  async wait(): Promise<void> {
    if (this.failures === 0) return;
    const { attempts, firstDelayMs } = this.restart;
    const delay = firstDelayMs * 2 ** Math.min(this.failures - 1, attempts);
    const wait = this.lastFailureAt + delay - Date.now();
    if (this.failures > attempts && wait > 0) {
      throw new GatewayError('GW_ERR_UPSTREAM_EXITED', `Upstream "${this.upstream}" could not be restarted after ${attempts} attempts; the next try is in ${Math.ceil(wait / 1000)} s`, this.upstream);
    }
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }

  /** A try failed: the child could not be spawned, or it was gone (or silent) before it answered its initialize. */
  failed(reason: string): void {
    this.failures++;
    this.lastFailureAt = Date.now();
    this.log.warn('stdio upstream child is gone; the next call starts a new one after a backoff', { reason, crashes: this.failures });
  }

  /** A child answered its initialize: the command works, and the next failure starts the backoff afresh. */
  succeeded(): void {
    this.failures = 0;
  }
}
