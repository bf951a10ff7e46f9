// Which changes to an upstream's entry make a reload build a new upstream, and which the running one takes
// as it runs: the key a kept upstream is shared under (upstream-leases.ts). It does not build or keep
// anything itself (gateway.ts does).

import type { GatehouseConfig, UpstreamConfig } from '../config/types.js';
import { isStdioUpstream } from '../config/types.js';
import { canonicalJson } from '../protocol/canonical-json.js';

/**
 * The entry as far as it shapes the upstream, with the gateway's `sessions` (which a reload keeps anyway):
 * two configs whose keys match may share one running upstream. Left out:
 * - `uriPrefixes`, which only the catalog reads (from the config, never from the upstream);
 * - for a stdio upstream, `timeouts`, `restart` and `maxSessions`: Gatehouse's own limits around its
 *   children, which the running upstream takes in place (StdioUpstream.retune). What makes a child (command,
 *   env, cwd, processes, era, maxMessageBytes) stays in, so a change to it starts new children.
 * - for an HTTP upstream (Streamable HTTP, HTTP+SSE or `auto`), `timeouts`, `pool` (which only Streamable
 *   HTTP reads) and `maxSessions` (which only HTTP+SSE sessions read): the running upstream takes them in
 *   place, a changed pool replaced for new requests while the old one drains (HttpUpstream.retune,
 *   SseUpstream.retuneHttp, DetectedTransport.retune). Where it sends (url, transport), as whom (headers,
 *   credentials, egress token) and what (era, maxMessageBytes) stays in, so a change to it builds a new upstream.
 */
export function leaseKey(u: UpstreamConfig, sessions: GatehouseConfig['sessions']): string {
  if (isStdioUpstream(u)) {
    const { uriPrefixes: _catalogs, timeouts: _timeouts, restart: _restart, maxSessions: _maxSessions, ...shape } = u;
    return canonicalJson({ upstream: shape, sessions });
  }
  const { uriPrefixes: _catalogs, timeouts: _timeouts, pool: _pool, maxSessions: _maxSessions, ...shape } = u;
  return canonicalJson({ upstream: shape, sessions });
}

/**
 * The catalog's key: its members, named by their own keys (each names the one running upstream held under it
 * while any runtime holds it, so equal keys mean the same objects), and all else it is built from: their
 * `uriPrefixes`, `tools.naming.prefix`, `policy.rules` (what it shows whom) and `sessions` (its legacy bridge).
 */
export function catalogLeaseKey(memberKeys: readonly string[], config: GatehouseConfig): string {
  return canonicalJson({ catalog: memberKeys, uriPrefixes: config.upstreams.map((u) => u.uriPrefixes), prefix: config.tools.naming.prefix, rules: config.policy.rules, sessions: config.sessions });
}

/**
 * The key of the catalog's legacy clients' sessions (catalog/legacy-front.ts): the upstreams by name, in
 * order, `tools.naming.prefix` and `sessions`. A new catalog under the same key takes them over: the names
 * its clients were shown stay the names of the same upstreams' items. Rules, `uriPrefixes` and the
 * members' entries may differ: the new catalog applies its own from the next request on.
 */
export function frontLeaseKey(config: GatehouseConfig): string {
  return canonicalJson({ legacyFront: config.upstreams.map((u) => u.name), prefix: config.tools.naming.prefix, sessions: config.sessions });
}
