// The store a config names: SQLite at `store.path` (the default), or Redis at `store.url`.

import { resolve } from 'node:path';
import type { StoreConfig } from '../config/types.js';
import { RedisStore } from './redis-store.js';
import { SqliteStore } from './sqlite-store.js';
import type { Store } from './store.js';

export function openStore(config: StoreConfig): Store {
  if (config.kind === 'redis') return new RedisStore(config);
  return new SqliteStore(resolve(config.path));
}
