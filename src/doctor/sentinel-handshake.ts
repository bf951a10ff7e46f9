// When ioredis can reach no sentinel it says "All sentinels are unreachable" and keeps none of the cause:
// a sentinel whose certificate holds another name than the one verified, or one signed by a CA not trusted,
// looked to doctor like a sentinel that was down, and got the generic hint. Doctor then shakes hands with
// the first sentinel itself, over node:tls with the options the store gives the sentinels (store.tls, with
// store.sentinel.servername as the name when it is set), and reports what TLS said.

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

/**
 * The failed TLS handshake with the first sentinel behind `failure`, when the store asks its sentinels over
 * TLS and ioredis said none could be reached; undefined otherwise, and when the handshake succeeds (the
 * cause is elsewhere) or does not end in time.
 */
export async function sentinelHandshakeFailure(config: StoreConfig & { kind: 'redis' }, failure: string): Promise<SentinelHandshake | undefined> {
  const first = config.sentinel?.nodes[0];
  if (first === undefined || !SENTINELS_UNREACHABLE.test(failure) || new URL(config.url).protocol !== 'rediss:') return undefined;
  const at = first.lastIndexOf(':');
  const host = first.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  const port = Number(first.slice(at + 1));
  const options = redisTlsOptions(config.tls, config.sentinel?.servername ?? config.tls?.servername);
  return new Promise((resolve) => {
    const socket = connect({ ...options, host, port });
    const done = (error: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(error === undefined ? undefined : { node: first, error });
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
