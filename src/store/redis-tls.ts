// The TLS options of every connection the Redis store makes (rediss://), from store.tls: the CA to trust,
// the client certificate and key a server with tls-auth-clients asks for (with the passphrase of a key that
// is encrypted), and the name to verify. Built once, when the store opens; the PEMs were read by the config
// loader (`${file:...}`).

import type { ConnectionOptions } from 'node:tls';
import type { RedisStore as RedisStoreConfig } from '../config/schema.generated.js';

/**
 * Node's defaults (the system's CAs, the host connected to as the name) for what store.tls leaves out.
 * `servername`: the name to verify, store.tls.servername unless the sentinels are named apart
 * (store.sentinel.servername).
 */
export function redisTlsOptions(tls: RedisStoreConfig['tls'], servername = tls?.servername): ConnectionOptions {
  return {
    ...(tls?.ca !== undefined ? { ca: tls.ca } : {}),
    ...(tls?.cert !== undefined ? { cert: tls.cert } : {}),
    ...(tls?.key !== undefined ? { key: tls.key } : {}),
    ...(tls?.passphrase !== undefined ? { passphrase: tls.passphrase } : {}),
    ...(servername !== undefined ? { servername } : {}),
  };
}
