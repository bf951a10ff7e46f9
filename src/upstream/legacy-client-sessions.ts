// The legacy sessions Gatehouse opens on a legacy upstream on behalf of modern clients. Legacy capabilities
// are fixed per session while modern ones travel per request, so sessions are pooled by the capability set
// declared (GATEWAY-REQUIREMENTS §16.1 "Session management"). A session the upstream ended is replaced.
// The pool is bounded per caller and in all; past a bound an idle session is ended, and with none idle the
// new session is refused (GW_ERR_SESSION_LIMIT), never opened past it.
//
// Over stdio every session is a child process, so a stdio upstream asks for more (`PoolOptions`): sessions
// nobody used for `idleTimeoutMs` are ended; Gatehouse's own reads (lists, owner '') use a session that is
// already open instead of opening one, and a session Gatehouse opened (it saw only lists) is handed to the
// first caller that declares the same capabilities; or one session serves everyone (`single`).

import { GatewayError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import type { JsonRpcResponse } from '../protocol/jsonrpc.js';
import { isLegacyVersion, protocolVersionHeader } from '../protocol/versions.js';
import { endFailedSession, gatehouseInitializeParams } from './era-probe.js';
import type { UpstreamMessages } from '../pipeline/ports.js';
import { canonicalJson } from '../protocol/canonical-json.js';
import { answeringPings, pong } from './answering-pings.js';

export interface LegacyClientSession {
  /** The upstream's Mcp-Session-Id, when it issued one. */
  id?: string;
  version: string;
  init: Record<string, unknown>;
  key: string;
  /** Whose session this is (see principalKey); callers never share an upstream session. '' is Gatehouse. */
  owner: string;
  /** The level last set with logging/setLevel on this session (the upstream took it). */
  logLevel?: string;
  /** The logging/setLevel sent last, while it is unanswered: requests at that level wait for its answer. */
  levelAsked?: { level: string; answer: Promise<boolean> };
}

export interface PoolOptions {
  /** A session with nothing in flight that no caller used for this long is ended. Default: never. */
  idleTimeoutMs?: number;
  /**
   * Gatehouse's own reads (owner '') go to a session already open that declared at least the capabilities
   * they ask with (the same preferred), and the first caller with the capabilities of a session Gatehouse
   * opened takes it over.
   */
  shareOwnReads?: boolean;
  /** A session held elsewhere that Gatehouse's own reads may use when the pool has none (not pooled). */
  borrow?: (capabilities: Record<string, unknown>) => LegacyClientSession | undefined;
  /** One session for every caller and capability set, opened declaring these capabilities. */
  single?: Record<string, unknown>;
  /** Told when a pooled session ends (idle, evicted, gone upstream, shutdown): what runs on it is over. */
  onEnd?: (session: LegacyClientSession) => void;
}

interface Entry {
  promise: Promise<LegacyClientSession>;
  /** Whose it is (LegacyClientSession.owner, known before the session is open). */
  owner: string;
  /** What the session declared at initialize. */
  capabilities: Record<string, unknown>;
  session?: LegacyClientSession;
  /** When a caller last used it (Gatehouse's own reads do not keep a session open). */
  lastUsed: number;
  /** Calls, parked calls and callers' listens on it right now. */
  busy: number;
  /** Given up (giveUp) while busy: DELETEd upstream once the last use ends. */
  deleteWhenIdle?: boolean;
}

/** Sessions kept open at once; past this, the least recently used with nothing on it is ended. */
const MAX_POOLED = 64;
/** Sessions one caller (or Gatehouse itself) keeps at once, one per capability set it declared. */
const MAX_PER_OWNER = 8;

/** How long shutdown waits for sessions to end cleanly upstream. */
const CLOSE_WAIT_MS = 1_000;

export class LegacyClientSessions {
  private readonly pool = new Map<string, Entry>();
  private readonly sweeper?: NodeJS.Timeout;

  constructor(private readonly client: UpstreamMessages, private readonly log: Logger, private readonly options: PoolOptions = {}) {
    const idle = options.idleTimeoutMs;
    if (idle !== undefined) this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, Math.max(1_000, idle / 4))).unref();
  }

  /**
   * The session for this caller and capability set, opened on first use. Sessions are keyed by both
   * (GATEWAY-REQUIREMENTS §Session management): an upstream may keep per-session state, which must never
   * be shared between callers.
   */
  get(capabilities: Record<string, unknown>, owner = ''): Promise<LegacyClientSession> {
    if (this.options.single) return this.entry('single', this.options.single, '').promise;
    const caps = canonicalJson(capabilities);
    const key = `${owner}\u0000${caps}`;
    const existing = this.pool.get(key);
    if (existing) return existing.promise;
    if (this.options.shareOwnReads) {
      if (owner === '') {
        const open = this.openSession(capabilities, caps);
        if (open) return Promise.resolve(open);
        const lent = this.options.borrow?.(capabilities);
        if (lent) return Promise.resolve(lent);
      } else {
        const ours = this.pool.get(`\u0000${caps}`);
        if (ours) {
          // Gatehouse's session becomes one more of the caller's: the pool holds as many as before.
          const full = this.makeRoom(owner, false);
          return full ? Promise.reject(full) : this.handOver(ours, `\u0000${caps}`, key, owner).promise;
        }
      }
    }
    const full = this.makeRoom(owner, true);
    return full ? Promise.reject(full) : this.entry(key, capabilities, owner).promise;
  }

  /**
   * Counts a call (or a parked call, or a caller's listen) on the session until `release`, so idling does
   * not end it meanwhile; a caller's use keeps the session open for another `idleTimeoutMs`.
   */
  use(session: LegacyClientSession, owner: string): () => void {
    const entry = this.pool.get(session.key);
    if (!entry || entry.session !== session) return () => {};
    entry.busy++;
    if (owner !== '') entry.lastUsed = Date.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.busy--;
      if (owner !== '') entry.lastUsed = Date.now();
      if (entry.busy === 0 && entry.deleteWhenIdle) {
        entry.deleteWhenIdle = false;
        void this.deleteUpstream(session);
      }
    };
  }

  /** Whether `session` is still the pool's (not dropped since it was handed out). */
  holds(session: LegacyClientSession): boolean {
    return this.pool.get(session.key)?.session === session;
  }

  /** Drops a session the upstream no longer knows (it answered 404), so the next get re-initializes. */
  discard(session: LegacyClientSession): void {
    if (this.pool.get(session.key)?.session !== session) return;
    this.pool.delete(session.key);
    this.options.onEnd?.(session);
  }

  /**
   * Drops a session the upstream may still hold (it stopped serving its GET stream: a 409 or 405 on a
   * reopen) and DELETEs it there, best effort (2025-11-25/basic/transports.mdx §Session Management 5),
   * once nothing runs on it any more. Dropped as `discard` drops one (until 5 December), it stayed upstream,
   * dead, until the server's own timeout, if it has one.
   */
  giveUp(session: LegacyClientSession): void {
    const entry = this.pool.get(session.key);
    if (entry?.session !== session) return;
    this.pool.delete(session.key);
    this.options.onEnd?.(session);
    // Calls still running (or parked) on it would be cut by the DELETE: it waits for the last to end.
    if (entry.busy > 0) entry.deleteWhenIdle = true;
    else void this.deleteUpstream(session);
  }

  headersFor(session: LegacyClientSession): Record<string, string> {
    return { ...(session.id !== undefined ? { 'mcp-session-id': session.id } : {}), ...protocolVersionHeader(session.version) };
  }

  async closeAll(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    const all = [...this.pool.values()];
    this.pool.clear();
    // A session still opening against an upstream that does not answer must not hold shutdown: its
    // connection is destroyed when the upstream's pool closes.
    const ended = Promise.all(all.map((e) => e.promise.then((s) => this.end(s), () => {})));
    await Promise.race([ended, new Promise<void>((r) => setTimeout(r, CLOSE_WAIT_MS).unref())]);
  }

  /** Ends the sessions that no caller used for `idleTimeoutMs` and that have nothing in flight. */
  sweep(now = Date.now()): void {
    const idle = this.options.idleTimeoutMs;
    if (idle === undefined) return;
    for (const [key, e] of this.pool) {
      if (e.session === undefined || e.busy > 0 || now - e.lastUsed < idle) continue;
      this.pool.delete(key);
      this.log.info('legacy upstream session ended: idle', { owner: e.session.owner === '' ? 'gatehouse' : 'caller', idleMs: now - e.lastUsed });
      void this.end(e.session);
    }
  }

  private entry(key: string, capabilities: Record<string, unknown>, owner: string): Entry {
    const existing = this.pool.get(key);
    if (existing) return existing;
    const entry: Entry = { promise: this.open(key, capabilities, owner), owner, capabilities, lastUsed: Date.now(), busy: 0 };
    entry.promise.then(
      (s) => (entry.session = s),
      () => {
        if (this.pool.get(key) === entry) this.pool.delete(key);
      },
    );
    this.pool.set(key, entry);
    return entry;
  }

  /**
   * Makes room for one more session of `owner` (`added`: one more in the pool too) by ending idle sessions,
   * least recently used first: the caller's own at MAX_PER_OWNER, anyone's at MAX_POOLED. A session with
   * calls, parked calls or listens on it, or still opening, is never ended; when nothing can be, the answer
   * is the refusal to give (GW_ERR_SESSION_LIMIT) and no session is opened. Capability sets are the
   * caller's to choose: until 3 December one caller cycling through 65 of them ended the oldest session in
   * the pool, whoever's it was and whatever ran on it; until 4 December, with none idle, each new set opened
   * a session past the bound anyway (over stdio, a child process each, kept until idle).
   */
  private makeRoom(owner: string, added: boolean): GatewayError | undefined {
    const mine = (e: Entry): boolean => e.owner === owner;
    while (this.count(mine) >= MAX_PER_OWNER) {
      if (!this.endLeastUsed(mine, 'the caller holds too many capability sets')) {
        return this.full(`${owner === '' ? 'Gatehouse holds' : 'This caller holds'} ${MAX_PER_OWNER} sessions (one per capability set declared), all in use; retry when a call ends, or declare fewer capability sets`);
      }
    }
    while (added && this.pool.size >= MAX_POOLED) {
      if (!this.endLeastUsed(() => true, 'the pool is full')) return this.full(`Gatehouse holds ${MAX_POOLED} sessions, all in use; retry later`);
    }
    return undefined;
  }

  private full(why: string): GatewayError {
    this.log.warn('legacy upstream session refused: no room', { why });
    return new GatewayError('GW_ERR_SESSION_LIMIT', `Upstream "${this.client.upstream}": ${why}`, this.client.upstream);
  }

  private count(which: (e: Entry) => boolean): number {
    let n = 0;
    for (const e of this.pool.values()) if (which(e)) n++;
    return n;
  }

  /** Ends the least recently used open session with nothing on it among `which`; false when there is none. */
  private endLeastUsed(which: (e: Entry) => boolean, why: string): boolean {
    let victim: [string, Entry] | undefined;
    for (const [key, e] of this.pool) {
      if (e.session === undefined || e.busy > 0 || !which(e)) continue;
      if (victim === undefined || e.lastUsed < victim[1].lastUsed) victim = [key, e];
    }
    if (victim === undefined) return false;
    this.pool.delete(victim[0]);
    this.log.info(`legacy upstream session ended: ${why}`, { owner: victim[1].owner === '' ? 'gatehouse' : 'caller' });
    void this.end(victim[1].session!);
    return true;
  }

  /**
   * An open session for Gatehouse's own reads: one that declared these capabilities, else the latest used
   * of those that declared more. A legacy server may offer some tools only to clients that declared a
   * capability, so a session that declared less would list less than the reader asks for.
   */
  private openSession(capabilities: Record<string, unknown>, caps: string): LegacyClientSession | undefined {
    let best: Entry | undefined;
    for (const [key, e] of this.pool) {
      if (e.session === undefined) continue;
      if (key.endsWith(`\u0000${caps}`)) return e.session;
      if (covers(e.capabilities, capabilities) && (!best || e.lastUsed > best.lastUsed)) best = e;
    }
    return best?.session;
  }

  /** A session Gatehouse opened becomes the caller's: it has served lists only. */
  private handOver(entry: Entry, from: string, to: string, owner: string): Entry {
    this.pool.delete(from);
    this.pool.set(to, entry);
    entry.owner = owner;
    entry.lastUsed = Date.now();
    const adopt = (s: LegacyClientSession): void => {
      s.owner = owner;
      s.key = to;
    };
    if (entry.session) adopt(entry.session);
    else entry.promise.then(adopt, () => {});
    entry.promise.catch(() => {
      if (this.pool.get(to) === entry) this.pool.delete(to);
    });
    return entry;
  }

  private async open(key: string, capabilities: Record<string, unknown>, owner: string): Promise<LegacyClientSession> {
    const params = gatehouseInitializeParams(capabilities);
    const reply = await this.client.post({ jsonrpc: '2.0', id: 'gatehouse-init', method: 'initialize', params }, {});
    let response: JsonRpcResponse | undefined;
    const id = reply.headers['mcp-session-id'];
    // Its pings are answered on the session the answer's headers named; the version is not agreed yet.
    const pongHeaders: Record<string, string> = typeof id === 'string' ? { 'mcp-session-id': id } : {};
    try {
      for await (const m of answeringPings(reply.messages, (ping) => pong(this.client, pongHeaders, ping, this.log))) {
        if ('id' in m && m.id === 'gatehouse-init') response = m as JsonRpcResponse;
      }
    } catch (err) {
      endFailedSession(this.client, id, params);
      throw err;
    }
    const version = response?.result?.protocolVersion;
    if (!response?.result || typeof version !== 'string' || !isLegacyVersion(version)) {
      endFailedSession(this.client, id, params);
      throw new GatewayError('GW_ERR_UPSTREAM_BAD_RESPONSE', `Upstream "${this.client.upstream}" refused initialize (HTTP ${reply.status})`, this.client.upstream);
    }
    const session: LegacyClientSession = { id: typeof id === 'string' ? id : undefined, version, init: response.result, key, owner };
    // 2025-11-25/basic/lifecycle.mdx §Initialization: the client MUST send notifications/initialized.
    try {
      const ack = await this.client.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, this.headersFor(session));
      for await (const _ of ack.messages) {
        // drain
      }
    } catch (err) {
      // Not used: the server issued it, so it is ended there, as one whose initialize failed (until
      // 5 December it was left upstream).
      endFailedSession(this.client, id, { protocolVersion: version });
      throw err;
    }
    this.log.info('legacy upstream session opened for modern clients', { version, capabilities, owner: owner === '' ? (this.options.single ? 'everyone' : 'gatehouse') : 'caller' });
    return session;
  }

  private async end(session: LegacyClientSession): Promise<void> {
    this.options.onEnd?.(session);
    await this.deleteUpstream(session);
  }

  private async deleteUpstream(session: LegacyClientSession): Promise<void> {
    if (session.id !== undefined) await this.client.deleteSession(session.id, session.version);
  }
}

/** Whether capabilities `declared` include everything `asked` declares (every key, at every depth). */
export function covers(declared: unknown, asked: unknown): boolean {
  if (typeof asked !== 'object' || asked === null || Array.isArray(asked)) return canonicalJson(declared) === canonicalJson(asked);
  if (typeof declared !== 'object' || declared === null || Array.isArray(declared)) return false;
  const d = declared as Record<string, unknown>;
  return Object.entries(asked).every(([k, v]) => k in d && covers(d[k], v));
}
