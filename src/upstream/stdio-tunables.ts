// What a reload may change on a running stdio upstream without new children: Gatehouse's own limits around
// them (`timeouts`, `restart`, `maxSessions`), held as live objects that its children, their sessions and
// its session table read at each use, so a new value holds from the next request on. What a child is made of
// (command, env, cwd, processes, era, maxMessageBytes) is not here: a change to it builds a new upstream
// (lease-key.ts decides which is which).

import type { StdioUpstreamConfig } from '../config/types.js';
import type { RequestTimeouts } from './pending-requests.js';
import { compileToolTimeouts, type ToolTimeout } from './tool-timeouts.js';

export class StdioTunables implements RequestTimeouts {
  requestTimeoutMs: number;
  toolTimeout: ToolTimeout | undefined;
  /** `restart`: the crash backoff of shared children and of perSession sessions, and of new perSession children. */
  readonly restart: StdioUpstreamConfig['restart'];
  /** The session table's limits: the upstream's `maxSessions` under `sessions.max`. */
  readonly sessions: { max: number; idleTimeoutMs: number };

  constructor(
    config: StdioUpstreamConfig,
    /** `sessions` of the gateway config, which a reload keeps. */
    private readonly limits: { max: number; idleTimeoutMs: number },
  ) {
    this.requestTimeoutMs = config.timeouts.requestMs;
    this.toolTimeout = compileToolTimeouts(config.timeouts.tools);
    this.restart = { ...config.restart };
    this.sessions = { max: Math.min(limits.max, config.maxSessions), idleTimeoutMs: limits.idleTimeoutMs };
  }

  /**
   * Takes the values of `config`, an entry of the same upstream that differs in these fields only. A lower
   * `maxSessions` ends no session at once: the table makes room at the next initialize, as at its cap.
   */
  apply(config: StdioUpstreamConfig): void {
    this.requestTimeoutMs = config.timeouts.requestMs;
    this.toolTimeout = compileToolTimeouts(config.timeouts.tools);
    Object.assign(this.restart, config.restart);
    this.sessions.max = Math.min(this.limits.max, config.maxSessions);
  }
}
