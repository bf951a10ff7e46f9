// The validated configuration, after YAML parsing, interpolation, schema validation and defaults. The
// types come from config/gatehouse.schema.json (schema.generated.ts, `npm run config:types`); this file
// names the parts the rest of Gatehouse uses. Nothing here is computed.

import type { LogLevel } from '../log/logger.js';
import type { ApiKey, GatehouseConfiguration, HttpUpstream, Oauth, PolicyRule, RedisStore, SqliteStore, StdioUpstream } from './schema.generated.js';

export type { LogLevel };

/**
 * The whole config. `store` is narrowed: the schema lets a SQLite store's `kind` name `redis` only so that
 * a misspelt kind gets a useful message; such a store is validated as Redis, never as SQLite.
 */
export type GatehouseConfig = Omit<GatehouseConfiguration, 'store'> & { store: StoreConfig };
export type StoreConfig = RedisStore | (Omit<SqliteStore, 'kind'> & { kind: 'sqlite' });

export type ListenConfig = GatehouseConfig['listen'];
export type AuthConfig = GatehouseConfig['auth'];
export type HttpUpstreamConfig = HttpUpstream;
export type StdioUpstreamConfig = StdioUpstream;
export type UpstreamConfig = HttpUpstreamConfig | StdioUpstreamConfig;
export type UpstreamTimeouts = HttpUpstream['timeouts'];
export type ClientCredentialsConfig = NonNullable<HttpUpstream['clientCredentials']>;
export type ApiKeyConfig = ApiKey;
export type OAuthConfig = Oauth;
export type PolicyRuleConfig = PolicyRule;
export type Era = HttpUpstream['era'];

export function isStdioUpstream(u: UpstreamConfig): u is StdioUpstreamConfig {
  return 'command' in u;
}
