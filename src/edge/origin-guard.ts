// DNS-rebinding defence: the Host and Origin of every MCP request are checked against allowlists before
// anything else is read (2026-07-28/basic/transports/streamable-http.mdx §Security Warning: servers MUST
// validate Origin and answer 403 to an invalid one; 2025-11-25/basic/transports.mdx likewise).

import type { IncomingHttpHeaders } from 'node:http';
import type { ListenConfig } from '../config/types.js';

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]', '::1'];

export type GuardVerdict = { ok: true } | { ok: false; message: string };

export type HostOriginGuard = (headers: IncomingHttpHeaders) => GuardVerdict;

/**
 * Builds the guard once per config. Empty `allowedHosts` on a loopback listener means loopback names
 * only; on any other interface it means any Host (a reverse proxy in front decides), plus `publicUrl`.
 * An Origin, when sent, must be listed in `allowedOrigins`, or name an allowed host, or equal the request's
 * own origin.
 */
export function compileHostOriginGuard(listen: Pick<ListenConfig, 'allowedHosts' | 'allowedOrigins' | 'publicUrl'>, loopback: boolean): HostOriginGuard {
  const publicHost = listen.publicUrl !== undefined ? new URL(listen.publicUrl).hostname.toLowerCase() : undefined;
  const hosts = new Set(listen.allowedHosts.map((h) => h.toLowerCase()));
  if (hosts.size === 0 && loopback) for (const h of LOOPBACK_NAMES) hosts.add(h);
  if (hosts.size > 0 && publicHost !== undefined) hosts.add(publicHost);
  const anyHost = hosts.size === 0 || hosts.has('*');
  const origins = new Set(listen.allowedOrigins.map((o) => o.toLowerCase().replace(/\/$/, '')));
  if (listen.publicUrl !== undefined) origins.add(new URL(listen.publicUrl).origin.toLowerCase());
  const anyOrigin = origins.has('*');

  return (headers) => {
    const host = headers.host;
    if (host === undefined) return { ok: false, message: 'Missing Host header' };
    const hostName = hostnameOf(host);
    if (!anyHost && !hosts.has(hostName)) return { ok: false, message: `Host "${host}" is not allowed` };
    const origin = headers.origin;
    if (origin === undefined || anyOrigin) return { ok: true };
    const normalized = origin.toLowerCase();
    if (origins.has(normalized)) return { ok: true };
    let originUrl: URL;
    try {
      originUrl = new URL(origin);
    } catch {
      return { ok: false, message: `Origin "${origin}" is not allowed` };
    }
    const originHost = originUrl.hostname.toLowerCase();
    // A browser page served by the same host (or by an allowed host, e.g. a local inspector) may call.
    if (originHost === hostName || (!anyHost && hosts.has(originHost))) return { ok: true };
    return { ok: false, message: `Origin "${origin}" is not allowed` };
  };
}

function hostnameOf(hostHeader: string): string {
  const h = hostHeader.toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end === -1 ? h : h.slice(0, end + 1);
  }
  const colon = h.indexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}
