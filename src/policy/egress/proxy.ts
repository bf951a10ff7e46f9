// The egress proxy (policy.egressProxy): a forward proxy on loopback for the upstreams' own outbound
// connections, which argument checks cannot see (a server may build a URL from other input). It speaks
// plain HTTP (absolute-form requests) and CONNECT tunnels, applies the egress rules to every destination
// (the rule that covers the whole upstream, egress-policy.ts ruleForUpstream), connects to the very
// address it judged, logs and counts each request, and refuses the rest with 403.
//
// Each stdio child gets HTTP_PROXY and HTTPS_PROXY with its upstream's name and a token as credentials,
// so the proxy knows whose connection it is. An HTTP upstream, which Gatehouse does not start, sends its
// name and the `egressProxyToken` its entry configures, when it has one (the chart gives its sidecar one). A
// request without credentials belongs to the only upstream when there is one; else, with no stdio upstream,
// to the only HTTP upstream without a token that can reach the proxy; else to nobody (uncredentialedOwner).

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { percentDecoded } from '../../protocol/percent-decode.js';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../log/logger.js';
import type { EgressPolicy } from './egress-policy.js';
import { isLoopback } from '../../net/loopback.js';
import { listenOn } from '../../net/listen.js';

export interface EgressProxyHooks {
  /** Counts one request: the upstream it came from (or "unknown") and whether it went through. */
  counted?(upstream: string, verdict: 'allowed' | 'blocked'): void;
}

/** Hop-by-hop headers (RFC 9110 §7.6.1) and the proxy's own credentials never go on. */
const HOP_BY_HOP = new Set(['connection', 'proxy-connection', 'keep-alive', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

export class EgressProxy {
  private readonly tokens = new Map<string, string>();
  private readonly server: Server;
  private url: string | undefined;

  constructor(
    private readonly policy: () => EgressPolicy,
    /** The upstream a request without credentials belongs to (the only one, if there is one). */
    private readonly soleUpstream: () => string | undefined,
    private readonly log: Logger,
    private readonly hooks: EgressProxyHooks = {},
    /** The password an HTTP upstream's entry gives it (`egressProxyToken`), read per request so a reload applies. */
    private readonly configuredToken: (upstream: string) => string | undefined = () => undefined,
  ) {
    // Whatever throws while a request is judged ends that request, never the process (an unhandled rejection
    // would): the proxy answers whoever reaches its port, an upstream's own code among them.
    this.server = createServer((req, res) => {
      this.forward(req, res).catch((err: unknown) => {
        this.log.error('egress proxy request failed', { err });
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('the egress proxy failed\n');
        else res.destroy();
      });
    });
    this.server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.tunnel(req, socket, head).catch((err: unknown) => {
        this.log.error('egress proxy tunnel failed', { err });
        socket.destroy();
      });
    });
    // A request Node cannot parse gets a plain 400 (as Node's own default would), not a silent hang-up.
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
      if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
      refuseRaw(socket, 400, 'malformed HTTP request');
    });
  }

  async listen(host: string, port: number): Promise<string> {
    this.url = await listenOn(this.server, host, port);
    this.log.info('egress proxy listening', { url: this.url });
    return this.url;
  }

  /** The environment that points a child of `upstream` at this proxy, with its credentials. */
  envFor(upstream: string): Record<string, string> {
    if (this.url === undefined) return {};
    let token = this.tokens.get(upstream);
    if (token === undefined) {
      token = randomBytes(18).toString('base64url');
      this.tokens.set(upstream, token);
      // A credential like any other: a child that prints its proxy URL (on stderr, which is logged) must not
      // put it in the log, where a reader could pose as that upstream to the proxy. Nor the header its client
      // makes of it (`curl -v` prints `Proxy-Authorization: Basic …`): base64 of user:password, the user
      // decoded from the URL as clients do, or left encoded as some send it.
      const basic = (user: string) => Buffer.from(`${user}:${token}`).toString('base64');
      this.log.addSecrets([token, basic(upstream), basic(encodeURIComponent(upstream))]);
    }
    const u = new URL(this.url);
    u.username = encodeURIComponent(upstream);
    u.password = token;
    const proxy = u.toString().replace(/\/$/, '');
    // Both spellings: tools differ in which they read. An inherited NO_PROXY would open a way around it.
    return { HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy, NO_PROXY: '', no_proxy: '' };
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }

  /** Whose request this is: from valid credentials, or the sole upstream; undefined for bad credentials. */
  private upstreamOf(req: IncomingMessage): string | undefined | false {
    const header = req.headers['proxy-authorization'];
    if (header === undefined) return this.soleUpstream();
    const m = /^Basic\s+(\S+)$/i.exec(header);
    if (!m) return false;
    // RFC 7617 §2: user-id ":" password, the user-id without a colon; the password (a configured
    // egressProxyToken may hold colons) is everything after the first.
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return false;
    const upstream = percentDecoded(decoded.slice(0, colon));
    if (upstream === undefined) return false; // broken percent-encoding: not a name Gatehouse gave out
    // A configured token first: a reload may have made a stdio upstream's name an HTTP upstream's.
    const expected = this.configuredToken(upstream) ?? this.tokens.get(upstream);
    if (expected === undefined) return false;
    // Bytes compared, and their lengths first: timingSafeEqual throws on buffers of different lengths,
    // which strings of one length in characters but not in UTF-8 bytes are.
    const given = Buffer.from(decoded.slice(colon + 1));
    const wanted = Buffer.from(expected);
    if (given.length !== wanted.length || !timingSafeEqual(given, wanted)) return false;
    return upstream;
  }

  /** The verdict on one destination, logged and counted; the address to connect to when allowed. */
  private async judge(upstream: string | undefined, scheme: string | undefined, host: string, port: number): Promise<{ address: string } | { reason: string }> {
    const policy = this.policy();
    const rule = policy.ruleForUpstream(upstream);
    // As the argument check and the forwarding reads a host: through the WHATWG parser, so that a CONNECT
    // to 2130706433, 127.1 or 0x7f000001 is judged as 127.0.0.1 (and a deny naming it applies).
    let bare = whatwgHost(host);
    while (bare.endsWith('.')) bare = bare.slice(0, -1);
    // A CONNECT (no scheme) is judged by its port against the allow's schemes first (tunnelBlock).
    const tunnelBlocked = scheme === undefined ? policy.tunnelBlock(rule, port) : undefined;
    const decided = tunnelBlocked !== undefined ? { block: tunnelBlocked } : await policy.decide({ ...(scheme ? { scheme } : {}), host: bare.toLowerCase(), port }, rule);
    const who = upstream ?? 'unknown';
    if ('block' in decided) {
      this.log.warn('egress proxy refused a connection', { upstream: who, host: bare, port, rule: decided.block.rule, reason: decided.block.reason });
      this.hooks.counted?.(who, 'blocked');
      return { reason: decided.block.reason };
    }
    this.log.info('egress proxy connection', { upstream: who, host: bare, port, rule: rule?.id ?? 'default' });
    this.hooks.counted?.(who, 'allowed');
    return { address: decided.addresses[0]! };
  }

  /** CONNECT host:port: a tunnel to the address judged, or 403. */
  private async tunnel(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    client.on('error', () => client.destroy());
    const upstream = this.upstreamOf(req);
    if (upstream === false) return void refuseRaw(client, 407, 'proxy credentials not recognised');
    const target = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(req.url ?? '');
    if (!target) return void refuseRaw(client, 400, 'CONNECT needs host:port');
    const port = Number(target[2]);
    // Refused before it is judged and counted: past 65535 connect() would throw, and port 0 is no destination.
    if (port < 1 || port > 65_535) return void refuseRaw(client, 400, 'CONNECT needs a port from 1 to 65535');
    const verdict = await this.judge(upstream, undefined, target[1]!, port);
    if ('reason' in verdict) return void refuseRaw(client, 403, `blocked by the gateway's egress policy: ${verdict.reason}`);
    const server: Socket = connect({ host: verdict.address, port, family: isIP(verdict.address) });
    server.on('error', () => {
      if (client.writable) refuseRaw(client, 502, 'the destination could not be reached');
      server.destroy();
    });
    server.on('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) server.write(head);
      server.pipe(client);
      client.pipe(server);
    });
    client.on('close', () => server.destroy());
  }

  /** A plain-HTTP request in absolute form: forwarded to the address judged, or 403. */
  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const upstream = this.upstreamOf(req);
    if (upstream === false) return void res.writeHead(407, { 'proxy-authenticate': 'Basic realm="gatehouse egress"', 'content-type': 'text/plain' }).end('proxy credentials not recognised\n');
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      return void res.writeHead(400, { 'content-type': 'text/plain' }).end('a proxy request names an absolute http:// URL\n');
    }
    if (url.protocol !== 'http:') return void res.writeHead(400, { 'content-type': 'text/plain' }).end('only http:// is forwarded; use CONNECT for https\n');
    const port = Number(url.port || 80);
    const verdict = await this.judge(upstream, 'http', url.hostname, port);
    if ('reason' in verdict) return void res.writeHead(403, { 'content-type': 'text/plain' }).end(`blocked by the gateway's egress policy: ${verdict.reason}\n`);
    const headers: Record<string, string | string[]> = {};
    const hopOnly = connectionNamed(req.headers.connection);
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP_BY_HOP.has(k) && !hopOnly.has(k)) headers[k] = v;
    headers.host = url.host;
    const out = httpRequest({ host: verdict.address, port, method: req.method, path: `${url.pathname}${url.search}`, headers, family: isIP(verdict.address) }, (answer) => {
      const back: Record<string, string | string[]> = {};
      const answerHopOnly = connectionNamed(answer.headers.connection);
      for (const [k, v] of Object.entries(answer.headers)) if (v !== undefined && !HOP_BY_HOP.has(k) && !answerHopOnly.has(k)) back[k] = v;
      res.writeHead(answer.statusCode ?? 502, back);
      answer.pipe(res);
    });
    out.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('the destination could not be reached\n');
      else res.destroy();
    });
    req.pipe(out);
  }
}

/**
 * Whose a request without proxy credentials is: the only upstream; or else, while no upstream is a stdio one,
 * the only HTTP upstream that can reach the proxy (on a loopback proxy, one whose URL is on loopback too: a
 * remote server cannot be the sender), the chart's sidecar MCP server container (http://127.0.0.1:<port>).
 * Beside a stdio upstream it is nobody's (undefined: judged by a rule covering every upstream, or the
 * defaults). A stdio child is handed credentials (envFor) but need not send them: it can drop them from its
 * HTTP_PROXY or dial the proxy itself, and until 5 December, beside one loopback HTTP upstream (the chart's
 * sidecar with a stdio `extraUpstreams` entry), it was then judged by that upstream's rule, which may allow
 * what its own refuses. An HTTP upstream keeps its rule there by sending its `egressProxyToken` (the chart
 * gives its sidecar one); one with a token is never the sender of a request without credentials. With
 * several candidates it stays nobody's too: the way out is a token for each (two sidecar servers).
 */
export function uncredentialedOwner(upstreams: ReadonlyArray<{ readonly name: string; readonly url?: string; readonly command?: unknown; readonly egressProxyToken?: string }>, proxyOnLoopback: boolean): string | undefined {
  if (upstreams.length === 1) return upstreams[0]!.egressProxyToken === undefined ? upstreams[0]!.name : undefined;
  let owner: string | undefined;
  for (const u of upstreams) {
    // A stdio child could be the sender, posing as whichever upstream elimination would pick: fail closed.
    if (u.command !== undefined) return undefined;
    if (u.url === undefined || u.egressProxyToken !== undefined || (proxyOnLoopback && !isLoopback(hostnameOf(u.url)))) continue;
    if (owner !== undefined) return undefined;
    owner = u.name;
  }
  return owner;
}

function hostnameOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
}

/**
 * The headers a message's `Connection` header names: they are for this hop alone, and a proxy removes them
 * before forwarding (RFC 9110 §7.6.1).
 */
function connectionNamed(connection: string | string[] | undefined): ReadonlySet<string> {
  if (connection === undefined) return NONE;
  const names = new Set<string>();
  for (const value of Array.isArray(connection) ? connection : [connection]) {
    for (const name of value.split(',')) {
      const n = name.trim().toLowerCase();
      if (n !== '') names.add(n);
    }
  }
  return names;
}
const NONE: ReadonlySet<string> = new Set();

function refuseRaw(socket: Duplex, status: number, message: string): void {
  const reason = status === 403 ? 'Forbidden' : status === 407 ? 'Proxy Authentication Required' : status === 502 ? 'Bad Gateway' : 'Bad Request';
  const body = `${message}\n`;
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n${status === 407 ? 'proxy-authenticate: Basic realm="gatehouse egress"\r\n' : ''}\r\n${body}`);
}

/** A host as the WHATWG URL parser reads it (IPv4 in any form to dotted decimal, IDN to punycode), without brackets; as given when it does not parse. */
function whatwgHost(host: string): string {
  let read = host;
  try {
    read = new URL(`http://${host}/`).hostname;
  } catch {
    // Judged as given: decide() blocks what it cannot resolve.
  }
  return read.startsWith('[') && read.endsWith(']') ? read.slice(1, -1) : read;
}
