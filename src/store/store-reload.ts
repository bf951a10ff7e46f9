// What a config reload may change in the running store: the TLS material of a Redis store alone (a client
// certificate rotated by cert-manager, a new CA bundle), which its next connections take up. A client
// certificate that expired before the next restart otherwise left every new connection refused: the store
// down and every governed call refused until someone restarted the gateway. Anything else about the store
// (another server, prefix or kind) still needs a restart: the state would move under running calls.

import type { StoreConfig } from '../config/types.js';
import { RedisStore } from './redis-store.js';
import type { Store } from './store.js';

/** Whether `next` differs from `running` in store.tls and nothing else (a Redis store both). */
export function tlsOnlyChange(running: StoreConfig, next: StoreConfig): boolean {
  if (running.kind !== 'redis' || next.kind !== 'redis') return false;
  const { tls: runningTls, ...runningRest } = running;
  const { tls: nextTls, ...nextRest } = next;
  return JSON.stringify(runningRest) === JSON.stringify(nextRest) && JSON.stringify(runningTls) !== JSON.stringify(nextTls);
}

/** Gives `store` the TLS material of `next` for its connections from now on (see tlsOnlyChange). */
export function useStoreTls(store: Store, next: StoreConfig): void {
  if (store instanceof RedisStore && next.kind === 'redis') store.useTls(next.tls);
}
