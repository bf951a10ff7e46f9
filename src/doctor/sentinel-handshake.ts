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
/** The most one handshake is waited for; a sentinel that says nothing by then tells doctor nothing more. */
const HANDSHAKE_WAIT_MS = 3_000;

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
 * HANDSHAKE_WAIT_MS at most; one that succeeds, or does not end in time, is left out (its cause, if any, is
 * elsewhere).
 */
export async function failingSentinels(config: StoreConfig & { kind: 'redis' }): Promise<SentinelHandshake[]> {
  if (config.sentinel === undefined || new URL(config.url).protocol !== 'rediss:') return [];
  const options = redisTlsOptions(config.tls, config.sentinel.servername ?? config.tls?.servername);
  const errors = await Promise.all(config.sentinel.nodes.map((node) => handshakeError(node, options)));
  return config.sentinel.nodes.flatMap((node, i) => (errors[i] === undefined ? [] : [{ node, error: errors[i] }]));
}

/** What TLS said when a connection to `node` (host:port, an IPv6 host in brackets) failed; undefined when it got through. */
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
    const timer = setTimeout(() => done(undefined), HANDSHAKE_WAIT_MS);
    // Over TLS 1.3 the handshake ends on the client's side before the server has judged the client's
    // certificate: a refusal of it (tls-auth-clients) comes as an error after, so the sentinel is asked a
    // PING, and any answer settles that it took the connection.
    socket.once('secureConnect', () => socket.write('PING\r\n'));
    socket.once('data', () => done(undefined));
    socket.once('error', (err) => done(err.message));
    socket.once('close', () => done(undefined));
  });
}
