// The validated configuration, after YAML parsing, interpolation, schema validation and defaults.
// The shape mirrors config/gatehouse.schema.json one to one; nothing here is computed.

import type { LogLevel } from '../log/logger.js';

export type { LogLevel };
export type Era = 'auto' | 'modern' | 'legacy';

export interface ListenConfig {
  /** Interface to bind; loopback unless the operator says otherwise. */
  host: string;
  port: number;
  /** Path of the MCP endpoint, e.g. `/mcp`. */
  path: string;
  /** The URL clients use to reach this endpoint (the OAuth resource); optional until auth needs it. */
  publicUrl?: string;
  /** Host header values accepted (DNS-rebinding guard); empty means "derive from host and publicUrl". */
  allowedHosts: string[];
  /** Origin header values accepted when a browser sends one; empty means "same host only". */
  allowedOrigins: string[];
  maxBodyBytes: number;
  /** Deepest object/array nesting accepted in a body. */
  maxJsonDepth: number;
  /** Time a client has to send a whole request body. */
  requestTimeoutMs: number;
  /** Time a client has to send its request headers (slowloris guard). */
  headersTimeoutMs: number;
  /** Idle time a kept-alive connection stays open between requests. */
  keepAliveTimeoutMs: number;
  /** Connections open at once from one client address; 0 for no limit. */
  maxConnectionsPerIp: number;
  /** Proxies whose X-Forwarded-For is believed when telling the client address (CIDRs or addresses). */
  trustedProxies: string[];
}

export interface UpstreamTimeouts {
  connectMs: number;
  /** Time allowed until the upstream's response headers arrive. */
  headersMs: number;
  /** Longest silence allowed between two chunks of a response body (SSE keeps streams alive with comments). */
  bodyMs: number;
}

export interface HttpUpstreamConfig {
  name: string;
  url: string;
  era: Era;
  /** Headers sent to this upstream, and the only client-independent headers it receives. */
  headers: Record<string, string>;
  timeouts: UpstreamTimeouts;
  pool: { connections: number; keepAliveTimeoutMs: number };
  /** Resource URIs routed here when no list showed them (catalog only). */
  uriPrefixes: string[];
  /** The upstream's own OAuth client-credentials grant; the token goes up as `Authorization: Bearer`. */
  clientCredentials?: ClientCredentialsConfig;
}

export interface ClientCredentialsConfig {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** RFC 8707 resource indicator. */
  resource?: string;
  refreshBeforeSeconds: number;
}

export interface StdioUpstreamConfig {
  name: string;
  /** argv: the program and its arguments, no shell involved. */
  command: string[];
  env: Record<string, string>;
  cwd?: string;
  era: Era;
  timeouts: { requestMs: number };
  /** Each legacy session is one child process; this caps them. */
  maxSessions: number;
  /** perSession: a child per client session; shared: a caller's clients multiplexed per capability set. */
  processes: 'perSession' | 'shared';
  /** Restarting a child that exited on its own: tries, and the first delay (doubling after). */
  restart: { attempts: number; firstDelayMs: number };
  /** Resource URIs routed here when no list showed them (catalog only). */
  uriPrefixes: string[];
}

export type UpstreamConfig = HttpUpstreamConfig | StdioUpstreamConfig;

export function isStdioUpstream(u: UpstreamConfig): u is StdioUpstreamConfig {
  return 'command' in u;
}

export interface ApiKeyConfig {
  id: string;
  hash: string;
  tenant?: string;
  scopes: string[];
  tools?: string[];
  expires?: string;
  disabled?: boolean;
}

export interface OAuthConfig {
  issuer: string;
  jwksUri?: string;
  audience: string;
  algorithms?: string[];
  scopesSupported?: string[];
  /** Named in the protected resource metadata; the issuer when absent. */
  authorizationServers?: string[];
  tenantClaim?: string;
  groupsClaim?: string;
  clockSkewSeconds: number;
  jwksMaxAgeSeconds: number;
  /** Least time between two key-set fetches caused by an unknown `kid`. */
  jwksMinRefreshSeconds: number;
  introspection?: { url: string; clientId: string; clientSecret: string; cacheMaxSeconds: number };
}

/** One `policy.rules` entry: who it applies to, and the items it allows or denies. */
export interface PolicyRuleConfig {
  id?: string;
  subjects?: string[];
  tenants?: string[];
  groups?: string[];
  scopes?: string[];
  access: 'allow' | 'deny';
  tools?: string[];
  prompts?: string[];
  resources?: string[];
}

export interface AuthConfig {
  /** Serve without credentials. Only accepted on a loopback listener. */
  anonymous: boolean;
  apiKeys: ApiKeyConfig[];
  oauth?: OAuthConfig;
  /** Scopes every caller needs for the MCP endpoint at all. */
  requiredScopes: string[];
  /** Failed authentications allowed per client address per window; `attempts: 0` turns it off. */
  failureLimit: { attempts: number; windowSeconds: number };
}

export interface GatehouseConfig {
  listen: ListenConfig;
  upstreams: UpstreamConfig[];
  sessions: { idleTimeoutMs: number; max: number; inputTimeoutMs: number };
  auth: AuthConfig;
  tools: { naming: { prefix: 'auto' | 'always' | 'never' }; outputValidation: 'enforce' | 'warn' | 'off' };
  policy: { rules: PolicyRuleConfig[] };
  store: { kind: 'sqlite'; path: string } | { kind: 'redis'; url: string };
  metrics: { enabled: boolean; host: string; port: number; path: string };
  admin: { enabled: boolean; host: string; port: number; token?: string };
  log: { level: LogLevel; requests: boolean };
  shutdown: { graceMs: number };
}
