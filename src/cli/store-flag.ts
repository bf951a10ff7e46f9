// `--store FILE` (serve, audit, budgets): a SQLite file standing in for the config's store. A Redis store
// is named by the config alone (DESIGN §CLI: --config finds the store), since a URL cannot say its
// keyPrefix, sentinel, cluster or TLS settings, and a reader with the wrong keyPrefix would find an empty
// log and call it intact. Readers open the store through openStoreForReading, which creates nothing, and
// find which store to read through readerStore, which settles --store beside --config.

import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { GatehouseConfig, StoreConfig } from '../config/types.js';
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { loadConfigFor } from './cli-config.js';

/** The SQLite store a `--store` value names; a URL (redis://…, or any scheme://) is refused, not taken as a file name. */
export function storeFlag(value: string): StoreConfig {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1];
  // Taken as a path, redis://host:6379 became ./redis:/host:6379, a new SQLite file: serve ran on it
  // unshared, and audit reported no store. Only the scheme is echoed: the URL may hold a password.
  if (scheme !== undefined) {
    throw new Error(`--store takes the path of a SQLite file, not a URL (${scheme}://…); for a Redis store give --config FILE with store.kind: redis (only the store's secrets need be set)`);
  }
  return { kind: 'sqlite', path: value };
}

/**
 * What a reader says when the SQLite file is not there. A relative path is taken from the directory the
 * command runs in (as the gateway takes it from where it runs), not from the config file's as ${file:...}
 * is: "no store at ./data/gatehouse.db" read from a home directory looked like a gateway that never wrote one.
 */
export function noStoreAt(path: string): string {
  if (isAbsolute(path)) return `no store at ${path}`;
  return `no store at ${path} (looked for at ${resolve(path)}: a relative store path is taken from the directory the command runs in; run it where the gateway runs, or give the file's absolute path)`;
}

/**
 * The store `config` names, opened for a reader (`audit`, `budgets`). Throws when a SQLite file is not
 * there: reading must not create one, or a mistyped path would verify as an empty, intact log. Nor may it
 * make a store of a file that is none (an empty file, another program's database): such a file is refused
 * when the store is first used (SqliteStoreOptions.existing).
 */
export function openStoreForReading(config: StoreConfig): Store {
  if (config.kind === 'sqlite' && !existsSync(config.path)) throw new Error(noStoreAt(config.path));
  return openStore(config, undefined, { existing: true });
}

/** `--store` beside a `--config` whose store a SQLite file cannot stand in for: a usage error (exit 2). */
export class StoreFlagConflict extends Error {}

/** The store a reader opens, and the config when one was read (budgets takes its limits from it). */
export interface ReaderStore {
  store: StoreConfig;
  config?: GatehouseConfig;
}

/**
 * Which store a reader (`audit`, `budgets`) opens. A config alone (--config, else $GATEHOUSE_CONFIG, else
 * ./gatehouse.yaml): its store, with only the store's secrets needed. `--store` alone: the file, and no
 * config is read. Both: the file, a copy or backup of the config's own SQLite store, and the config for the
 * rest (budgets' limits), its secrets not needed. A config whose store is Redis is refused then: the file is
 * not what that gateway writes, and the Redis settings (keyPrefix, sentinel, cluster, store.tls) were
 * silently dropped for it, so an old SQLite file verified as the deployment's audit log.
 */
export async function readerStore(configFlag: string | undefined, storeOverride: StoreConfig | undefined, env: NodeJS.ProcessEnv, what: string): Promise<ReaderStore> {
  if (storeOverride === undefined) {
    const config = await loadConfigFor(configFlag ?? env.GATEHOUSE_CONFIG ?? 'gatehouse.yaml', env, ['store'], what);
    return { store: config.store, config };
  }
  if (configFlag === undefined) return { store: storeOverride };
  const config = await loadConfigFor(configFlag, env, [], what);
  if (config.store.kind === 'redis') {
    const path = storeOverride.kind === 'sqlite' ? storeOverride.path : '';
    const settings = config.store.tls !== undefined ? 'store.kind: redis, with store.tls' : 'store.kind: redis';
    throw new StoreFlagConflict(`--store ${path} and --config ${configFlag} name two stores: the config's is Redis (${settings}), which a SQLite file cannot stand in for (its keyPrefix, sentinel, cluster and TLS settings would go unused, and the gateway does not write the file); give --config alone to read the Redis store, or --store alone to read the file`);
  }
  return { store: storeOverride, config };
}
