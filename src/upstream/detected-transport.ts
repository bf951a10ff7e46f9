// An HTTP upstream whose transport is found out (`transport: auto`, the default), as the spec tells a client
// to (2025-11-25 basic/transports.mdx §Backwards Compatibility): Streamable HTTP first; when neither era's
// handshake works and the POST of `initialize` failed with 400, 404 or 405, a GET that expects the `endpoint`
// event of the HTTP+SSE transport. Once the server answers it, every call goes to the SSE upstream.

import type { HttpUpstreamConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import type { ReplacePause } from './bridge-legacy-client.js';
import type { CallContext } from '../pipeline/context.js';
import type { Outcome } from '../pipeline/outcome.js';
import type { ClientEra } from '../protocol/versions.js';
import type { ModernFace, SubscriptionJudge, Upstream } from '../pipeline/ports.js';
import { upstreamCredentials } from './credentials.js';
import { NoHandshakeError } from './era-probe.js';
import { HttpUpstream } from './http.js';
import { SseChannel } from './sse-channel.js';
import { createSseUpstream, type SseUpstream } from './sse-upstream.js';

type Limits = ConstructorParameters<typeof HttpUpstream>[1];

export class DetectedTransport implements Upstream {
  readonly name: string;
  private readonly http: HttpUpstream;
  private sse: SseUpstream | undefined;
  private detecting: Promise<boolean> | undefined;
  /** A server that is neither is asked again at most this often (each call would otherwise cost a GET). */
  private notSseUntil = 0;
  private readonly log: Logger;

  constructor(
    /** The running entry: a reload may change its `timeouts`, `pool` and `maxSessions` (retune). */
    private config: HttpUpstreamConfig,
    private readonly limits: Limits,
    log: Logger,
    private readonly observe?: (seconds: number) => void,
    replacePause?: ReplacePause,
  ) {
    this.name = config.name;
    this.log = log;
    this.http = new HttpUpstream(config, limits, log, observe, replacePause);
  }

  get transport(): 'http' | 'sse' {
    return this.sse ? 'sse' : 'http';
  }

  /**
   * Takes a reload's new `timeouts`, `pool` and `maxSessions` in place, on the transport found so far (the
   * Streamable HTTP side's pools and limits, or the HTTP+SSE sessions'), and for an HTTP+SSE server found later.
   */
  retune(config: HttpUpstreamConfig): void {
    this.config = config;
    this.http.retune(config);
    this.sse?.retuneHttp(config);
  }

  handle(ctx: CallContext): Promise<Outcome> {
    if (this.sse) return this.sse.handle(ctx);
    // Only a call that waits for the era handshake can learn that the URL speaks HTTP+SSE instead; any
    // other gets the adapter's own promise, with no async frame of this one's around it.
    return this.http.mayProbe(ctx) ? this.handleProbing(ctx) : this.http.handle(ctx);
  }

  private async handleProbing(ctx: CallContext): Promise<Outcome> {
    const outcome = await this.http.handle(ctx);
    if (outcome.kind === 'refused' && outcome.refusal.kind === 'failure' && isSseHint(outcome.refusal.error) && (await this.detect())) return this.sse!.handle(ctx);
    return outcome;
  }

  async modernFace(): Promise<ModernFace> {
    if (this.sse) return this.sse.modernFace();
    try {
      return await this.http.modernFace();
    } catch (err) {
      if (isSseHint(err) && (await this.detect())) return this.sse!.modernFace();
      throw err;
    }
  }

  async ready(): Promise<boolean> {
    return (this.sse ?? this.http).ready();
  }

  refusesCoreTasks(ctx: CallContext): Promise<boolean> {
    return (this.sse ?? this.http).refusesCoreTasks(ctx);
  }

  knownEra(): 'modern' | 'legacy' | undefined {
    return (this.sse ?? this.http).knownEra();
  }

  speaksEra(era: ClientEra): boolean {
    return (this.sse ?? this.http).speaksEra(era);
  }

  /** Whichever transport holds legacy clients' sessions (LegacyClientBridge), judged again after a reload. */
  async rejudgeSubscriptions(mayKeep: SubscriptionJudge): Promise<void> {
    await this.http.rejudgeSubscriptions(mayKeep);
    await this.sse?.rejudgeSubscriptions(mayKeep);
  }

  /**
   * The side found asks its session: an HTTP+SSE server's session (an event stream Gatehouse holds for one
   * client, sse-upstream.ts) holds that client's subscriptions as a Streamable HTTP session does. Until
   * 5 December that side was answered false, and the server went on watching a URI a reload's rules forbid.
   */
  unsubscribeSession(sessionId: string, version: string, uri: string): Promise<boolean> {
    if (this.sse === undefined) return this.http.unsubscribeSession(sessionId, version, uri);
    return this.sse.unsubscribeSession?.(sessionId, version, uri) ?? Promise.resolve(false);
  }

  async close(): Promise<void> {
    await Promise.all([this.http.close(), this.sse?.close()]);
  }

  /** Whether the URL opens an HTTP+SSE event stream that names its endpoint; once true, the SSE upstream serves. */
  private detect(): Promise<boolean> {
    if (Date.now() < this.notSseUntil) return Promise.resolve(false);
    this.detecting ??= (async () => {
      const credentials = upstreamCredentials(this.config, this.log);
      const probe = new SseChannel({ upstream: this.name, url: this.config.url, credentials, connectTimeoutMs: this.config.timeouts.connectMs, openTimeoutMs: this.config.timeouts.headersMs, requestTimeoutMs: this.config.timeouts.headersMs, maxEventBytes: this.config.maxMessageBytes }, this.log);
      try {
        await probe.start();
      } catch (err) {
        this.log.info('upstream is not an HTTP+SSE server either', { upstream: this.name, err });
        this.detecting = undefined;
        this.notSseUntil = Date.now() + 10_000;
        return false;
      } finally {
        await probe.stop();
        credentials.close();
      }
      this.log.info('upstream transport detected', { upstream: this.name, transport: 'sse' });
      this.sse = createSseUpstream(this.config, this.limits, this.log, this.observe);
      return true;
    })();
    return this.detecting;
  }
}

function isSseHint(err: unknown): boolean {
  return err instanceof NoHandshakeError && err.maybeSse;
}
