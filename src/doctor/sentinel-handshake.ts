// When ioredis can reach no sentinel it says "All sentinels are unreachable" and keeps none of the cause:
// a sentinel whose certificate holds another name than the one verified, or one signed by a CA not trusted,
// looked to doctor like a sentinel that was down, and got the generic hint. Doctor then shakes hands with
// each configured sentinel itself, over node:tls with the options the store gives the sentinels (store.tls,
// with store.sentinel.servername as the name when it is set), and reports what TLS said of each. Every one
// is asked, not the first alone: ioredis stops at the first sentinel that answers, so a store that works can
// hide a sentinel it would need once that one is down, and a first sentinel that is down hid the certificate
// error of the next (until 5 December only the first was asked, and only when none answered).

import { connect } from 'node:tls';
import type { StoreConfig } from '../config/types.js';
import { redisTlsOptions } from '../store/redis-tls.js';

/** ioredis' words when no sentinel could be asked for the primary. */
const SENTINELS_UNREACHABLE = /All sentinels are unreachable/;
/**
 * The most one handshake is waited for. A sentinel that has not answered by then is named: one that took the
 * TCP connection and said nothing (another service on that port, or a stalled sentinel) was left out until
 * 5 December, as if it had answered, and a store that came up through another sentinel looked sound.
 */
const HANDSHAKE_WAIT_MS = 3_000;
const WAIT_WORDS = `${HANDSHAKE_WAIT_MS / 1_000} s`;
/** What is said of a sentinel that took the connection but did not answer; redis-hint.ts matches it. */
export const SILENT_SENTINEL = `it accepted the connection but did not answer within ${WAIT_WORDS}`;

export interface SentinelHandshake {
  /** The sentinel shaken hands with, as store.sentinel.nodes writes it. */
  readonly node: string;
  /** What TLS said when the handshake failed. */
  readonly error: string;
}

/** True when `failure` is ioredis' report that it could ask no sentinel, which keeps none of the cause. */
export function sentinelsUnreachable(failure: string): boolean {
  return SENTINELS_UNREACHABLE.test(failure);
}

/**
 * The failed TLS handshakes with the configured sentinels, in store.sentinel.nodes' order, when the store asks
 * its sentinels over TLS; empty otherwise. All are shaken hands with at once, each waited for
 * HANDSHAKE_WAIT_MS at most; one that answers the PING is left out, one that has not by then is named.
 */
export async function failingSentinels(config: StoreConfig & { kind: 'redis' }): Promise<SentinelHandshake[]> {
  if (config.sentinel === undefined || new URL(config.url).protocol !== 'rediss:') return [];
  const options = redisTlsOptions(config.tls, config.sentinel.servername ?? config.tls?.servername);
  const errors = await Promise.all(config.sentinel.nodes.map((node) => handshakeError(node, options)));
  return config.sentinel.nodes.flatMap((node, i) => (errors[i] === undefined ? [] : [{ node, error: errors[i] }]));
}

/** What TLS said when a connection to `node` (host:port, an IPv6 host in brackets) failed, or what was missing by the deadline; undefined when the sentinel answered. */
function handshakeError(node: string, options: ReturnType<typeof redisTlsOptions>): Promise<string | undefined> {
  const at = node.lastIndexOf(':');
  const host = node.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  const port = Number(node.slice(at + 1));
  return new Promise((resolve) => {
    const socket = connect({ ...options, host, port });
    const done = (error: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(error);
    };
    let accepted = false;
    socket.once('connect', () => void (accepted = true));
    const timer = setTimeout(() => done(accepted ? SILENT_SENTINEL : `it did not accept a connection within ${WAIT_WORDS}`), HANDSHAKE_WAIT_MS);
    // Over TLS 1.3 the handshake ends on the client's side before the server has judged the client's
    // certificate: a refusal of it (tls-auth-clients) comes as an error after, so the sentinel is asked a
    // PING, and any answer settles that it took the connection.
    socket.once('secureConnect', () => socket.write('PING\r\n'));
    socket.once('data', () => done(undefined));
    socket.once('error', (err) => done(err.message));
    // 'error' comes before 'close' when there is one: a close alone is a peer that hung up without a word.
    socket.once('close', () => done('it closed the connection without answering'));
  });
}
