// DNS-rebinding defence: the Host and Origin of every MCP request are checked against allowlists before
// anything else is read (2026-07-28/basic/transports/streamable-http.mdx §Security Warning: servers MUST
// validate Origin and answer 403 to an invalid one; 2025-11-25/basic/transports.mdx likewise). An origin is
// a scheme, a host and a port: a page on another port of the same host is another origin.

import type { IncomingHttpHeaders } from 'node:http';
import type { ListenConfig } from '../config/types.js';

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]', '::1'];

export type GuardVerdict = { ok: true } | { ok: false; message: string };

export type HostOriginGuard = (headers: IncomingHttpHeaders) => GuardVerdict;

/** A host name with the port it must come with; `''` for any port. */
interface Authority {
  readonly name: string;
  readonly port: string;
}

/** What one Host value was judged to be, with the Origins already judged against it. */
interface JudgedHost {
  readonly verdict: GuardVerdict;
  readonly name: string;
  /** The port the Host names; `''` when it names none (the scheme's default, whichever it was). */
  readonly port: string;
  readonly origins: Map<string, GuardVerdict>;
}

const OK: GuardVerdict = { ok: true };
/** Host and Origin values are client-chosen: the remembered ones are bounded in count and in length. */
const HOSTS_REMEMBERED = 256;
const ORIGINS_REMEMBERED_PER_HOST = 16;
const REMEMBERED_VALUE_MAX = 300;

/**
 * Builds the guard once per config. Empty `allowedHosts` on a loopback listener means loopback names
 * only; on any other interface it means any Host (a reverse proxy in front decides), plus `publicUrl`.
 * An Origin, when sent, must be listed in `allowedOrigins` or be `publicUrl`'s origin (both exact), or be
 * the request's own origin, or name an allowed host: see `originAllowed`.
 */
export function compileHostOriginGuard(listen: Pick<ListenConfig, 'allowedHosts' | 'allowedOrigins' | 'publicUrl'>, loopback: boolean): HostOriginGuard {
  const listed = listen.allowedHosts.map(authorityOf);
  const anyHost = listed.some((a) => a.name === '*') || (listed.length === 0 && !loopback);
  /** The names this listener answers to, each with its port rule; an Origin naming one may call. */
  const aliases: readonly Authority[] = listed.length === 0 && loopback ? LOOPBACK_NAMES.map((name) => ({ name, port: '' })) : listed;
  // publicUrl's host is an allowed Host (any port: a proxy may map it), but as an Origin only its exact origin.
  const publicHost = listen.publicUrl !== undefined && !anyHost ? new URL(listen.publicUrl).hostname.toLowerCase() : undefined;
  const origins = new Set(listen.allowedOrigins.map((o) => o.toLowerCase().replace(/\/$/, '')));
  if (listen.publicUrl !== undefined) origins.add(new URL(listen.publicUrl).origin.toLowerCase());
  const anyOrigin = origins.has('*');

  const judgeHost = (host: string): JudgedHost => {
    const { name, port } = authorityOf(host);
    const allowed = anyHost || name === publicHost || aliases.some((a) => a.name === name && hostPortMatches(port, a.port));
    return { verdict: allowed ? OK : { ok: false, message: `Host "${host}" is not allowed` }, name, port, origins: new Map() };
  };

  /**
   * The request's own origin: the Host's name and port. Which scheme the client used cannot be known behind
   * a TLS-terminating proxy, so http and https are both taken. A listed host is another name of this
   * listener: with a port, an Origin on that port; without one, on the port the request itself came to.
   */
  const originAllowed = (origin: string, host: JudgedHost): boolean => {
    if (origins.has(origin.toLowerCase().replace(/\/$/, ''))) return true;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    const port = url.port === '' ? (url.protocol === 'https:' ? '443' : '80') : url.port;
    // A Host without a port names the default port of a scheme unknown here: only an Origin on its own
    // scheme's default port (none written) can be that.
    const onRequestPort = host.port === '' ? url.port === '' : port === host.port;
    if (url.hostname === host.name) return onRequestPort;
    if (anyHost) return false;
    return aliases.some((a) => a.name === url.hostname && (a.port === '' ? onRequestPort : port === a.port));
  };

  const judgeOrigin = (origin: string, host: JudgedHost): GuardVerdict => (originAllowed(origin, host) ? OK : { ok: false, message: `Origin "${origin}" is not allowed` });

  // Per guard, so a reload starts afresh. Emptied when full rather than frozen: a flood of made-up values
  // costs the legitimate ones one judgement each, never their place for good.
  const judged = new Map<string, JudgedHost>();

  return (headers) => {
    const host = headers.host;
    if (host === undefined) return { ok: false, message: 'Missing Host header' };
    let judgedHost = judged.get(host);
    if (judgedHost === undefined) {
      judgedHost = judgeHost(host);
      if (host.length <= REMEMBERED_VALUE_MAX) {
        if (judged.size >= HOSTS_REMEMBERED) judged.clear();
        judged.set(host, judgedHost);
      }
    }
    if (!judgedHost.verdict.ok) return judgedHost.verdict;
    const origin = headers.origin;
    if (origin === undefined || anyOrigin) return OK;
    let verdict = judgedHost.origins.get(origin);
    if (verdict === undefined) {
      verdict = judgeOrigin(origin, judgedHost);
      if (origin.length <= REMEMBERED_VALUE_MAX) {
        if (judgedHost.origins.size >= ORIGINS_REMEMBERED_PER_HOST) judgedHost.origins.clear();
        judgedHost.origins.set(origin, verdict);
      }
    }
    return verdict;
  };
}

/** A Host without a port matches a rule for 80 or 443: browsers leave the default port out of Host. */
function hostPortMatches(hostPort: string, rulePort: string): boolean {
  if (rulePort === '') return true;
  return hostPort === '' ? rulePort === '80' || rulePort === '443' : hostPort === rulePort;
}

/** `name[:port]` of a Host header or an `allowedHosts` entry, lower-case; an IPv6 address keeps its brackets. */
function authorityOf(value: string): Authority {
  const h = value.toLowerCase();
  const nameEnd = h.startsWith('[') ? h.indexOf(']') + 1 : h.indexOf(':');
  if (nameEnd <= 0) return { name: h, port: '' };
  const colon = h.indexOf(':', nameEnd);
  return { name: h.slice(0, nameEnd), port: colon === nameEnd ? h.slice(colon + 1) : '' };
}
