// When ioredis can reach no sentinel it says "All sentinels are unreachable" and keeps none of the cause:
// a sentinel whose certificate holds another name than the one verified, or one signed by a CA not trusted,
// looked to doctor like a sentinel that was down, and got the generic hint. Doctor then asks each configured
// sentinel itself, a PING over the connection the store would make: over node:tls with the options the store
// gives the sentinels (store.tls, with store.sentinel.servername as the name when it is set) for rediss://,
// over plain TCP for redis://, and reports what each connection met. Every one is asked, not the first
// alone: ioredis stops at the first sentinel that answers, so a store that works can hide a sentinel it
// would need once that one is down, and a first sentinel that is down hid the certificate error of the next
// (until 5 December only the first was asked, and only when none answered; and plain-text sentinels were
// not asked at all).

import { connect as connectPlain, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import type { StoreConfig } from '../config/types.js';
import { redisTlsOptions } from '../store/redis-tls.js';

/**
 * The store's words when it never reached the primary through the sentinels: ioredis' when it could ask
 * none, or the store's own (redis-store.ts describe) when the first connection was still being tried, as
 * when a sentinel takes the connection and never answers.
 */
const SENTINELS_UNREACHABLE = /All sentinels are unreachable|not connected to Redis \(connecting\)/;
/**
 * The most one sentinel is waited for. One that has not answered by then is named: one that took the TCP
 * connection and said nothing (another service on that port, or a stalled sentinel) was left out until
 * 5 December, as if it had answered, and a store that came up through another sentinel looked sound.
 */
const PROBE_WAIT_MS = 3_000;
const WAIT_WORDS = `${PROBE_WAIT_MS / 1_000} s`;
/** What is said of a sentinel that took the connection but did not answer; redis-hint.ts matches it. */
export const SILENT_SENTINEL = `it accepted the connection but did not answer within ${WAIT_WORDS}`;

export interface FailingSentinel {
  /** The sentinel asked, as store.sentinel.nodes writes it. */
  readonly node: string;
  /** What the connection met: TLS's or the socket's error, or what was missing by the deadline. */
  readonly error: string;
  /** Whether it was asked over TLS (a rediss:// store). */
  readonly tls: boolean;
}

/** True when `failure` is the store's report that it reached no sentinel, which keeps none of the cause. */
export function sentinelsUnreachable(failure: string): boolean {
  return SENTINELS_UNREACHABLE.test(failure);
}

/**
 * The configured sentinels that did not answer a PING, in store.sentinel.nodes' order; empty without
 * Sentinel. All are asked at once, each waited for PROBE_WAIT_MS at most.
 */
export async function failingSentinels(config: StoreConfig & { kind: 'redis' }): Promise<FailingSentinel[]> {
  if (config.sentinel === undefined) return [];
  const tls = new URL(config.url).protocol === 'rediss:' ? redisTlsOptions(config.tls, config.sentinel.servername ?? config.tls?.servername) : undefined;
  const errors = await Promise.all(config.sentinel.nodes.map((node) => probeError(node, tls)));
  return config.sentinel.nodes.flatMap((node, i) => (errors[i] === undefined ? [] : [{ node, error: errors[i], tls: tls !== undefined }]));
}

/**
 * What a connection to `node` (host:port, an IPv6 host in brackets) met, over TLS when `tls` is given; undefined
 * when the sentinel answered.
 */
function probeError(node: string, tls: ReturnType<typeof redisTlsOptions> | undefined): Promise<string | undefined> {
  const at = node.lastIndexOf(':');
  const host = node.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  const port = Number(node.slice(at + 1));
  return new Promise((resolve) => {
    // Any answer to the PING settles that the sentinel took the connection. Over TLS 1.3 the handshake ends
    // on the client's side before the server has judged the client's certificate: a refusal of it
    // (tls-auth-clients) comes as an error after, which the wait for an answer catches.
    const ping = (): void => void socket.write('PING\r\n');
    const socket: Socket = tls === undefined ? connectPlain({ host, port }, ping) : connectTls({ ...tls, host, port }, ping);
    const done = (error: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(error);
    };
    let accepted = false;
    socket.once('connect', () => void (accepted = true));
    const timer = setTimeout(() => done(accepted ? SILENT_SENTINEL : `it did not accept a connection within ${WAIT_WORDS}`), PROBE_WAIT_MS);
    socket.once('data', () => done(undefined));
    socket.once('error', (err) => done(err.message));
    // 'error' comes before 'close' when there is one: a close alone is a peer that hung up without a word.
    socket.once('close', () => done('it closed the connection without answering'));
  });
}
