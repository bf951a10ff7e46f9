// The hosts Gatehouse's own listeners bind (listen, metrics, admin, the egress proxy) name an interface; the
// port has a key of its own. `host: "127.0.0.1:8080"` or `host: http://0.0.0.0` passed every check (with
// anonymous access, the loopback check blamed auth.anonymous instead), and the start failed with "getaddrinfo
// ENOTFOUND 127.0.0.1:8080". Said at the key instead, with what to write.

import type { GatehouseConfig } from './types.js';

/** What is wrong with `host` as an address to bind, or undefined. */
export function listenerHostProblem(key: string, host: string): string | undefined {
  // A value still reading `${...}` is a secret absent here (check-config --env-optional): nothing to judge.
  if (host.includes('${')) return undefined;
  if (host.includes('://') || host.includes('/')) return `${key}: "${host}" is a URL; write the interface address alone (127.0.0.1, 0.0.0.0, ::1)`;
  const bracketed = /^\[([^\]]*)\](?::(\d+))?$/.exec(host);
  if (bracketed?.[2] !== undefined) return `${key}: "${host}" names a port; write the address alone (${bracketed[1]}) and the port in ${portKey(key)}`;
  if (bracketed) return `${key}: "${host}" is in brackets; write an IPv6 address without them (${bracketed[1]})`;
  const withPort = /^([^:]+):(\d*)$/.exec(host);
  if (withPort) return `${key}: "${host}" names a port; write the address alone (${withPort[1]}) and the port in ${portKey(key)}`;
  return undefined;
}

function portKey(hostKey: string): string {
  return hostKey.replace(/host$/, 'port');
}

/** The problems of every listener host the config binds. */
export function listenerHostProblems(config: GatehouseConfig): string[] {
  const hosts: Array<[string, string]> = [['listen.host', config.listen.host]];
  if (config.metrics.enabled) hosts.push(['metrics.host', config.metrics.host]);
  if (config.admin.enabled) hosts.push(['admin.host', config.admin.host]);
  if (config.policy.egressProxy.enabled) hosts.push(['policy.egressProxy.host', config.policy.egressProxy.host]);
  return hosts.flatMap(([key, host]) => listenerHostProblem(key, host) ?? []);
}
