// The store a config names: SQLite at `store.path` (the default), or Redis at `store.url`.

import { resolve } from 'node:path';
import type { StoreConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { RedisStore } from './redis-store.js';
import { SqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
import type { Store } from './store.js';

/**
 * `log`: where the store tells what no operation's failure shows (the Redis store: audit records lost).
 * `options.existing`: a SQLite file must already hold a store (readers; see SqliteStoreOptions).
 */
export function openStore(config: StoreConfig, log?: Logger, options: SqliteStoreOptions = {}): Store {
  if (config.kind === 'redis') return new RedisStore(config, log);
  return new SqliteStore(resolve(config.path), options);
}
