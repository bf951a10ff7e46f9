// The checks a config must pass beyond its schema: rules that relate two keys (the OAuth audience and the
// public URL), values the schema cannot judge (dates, CIDR ranges), and features this build refuses.
// `serve`, reloads and `check-config` all run them, so a file that checks clean is one that serves.

import { isLoopback } from '../net/loopback.js';
import { trustedProxyProblems } from '../net/client-address.js';
import { expiryOf } from './expiry.js';
import { cidrProblem } from '../net/addresses.js';
import { percentDecoded } from '../protocol/percent-decode.js';
import type { GatehouseConfig } from './types.js';
import { formatPath } from './load.js';
import { toolRefProblems } from './tool-refs.js';
import { listenerHostProblem, listenerHostProblems } from './listener-hosts.js';
import { storeTlsProblems } from './store-tls.js';

/**
 * A value still reading `${...}`: a secret absent here (check-config --env-optional keeps its text and warns).
 * Nothing to judge; judged where the secret is set.
 */
function absentSecret(value: string): boolean {
  return value.includes('${');
}

/** Problems that make a config unusable by this build, reported before anything starts. */
export function unsupportedFeatures(config: GatehouseConfig): string[] {
  const problems: string[] = [];
  const { auth } = config;
  if (!auth.anonymous && auth.apiKeys.length === 0 && auth.oauth === undefined) {
    problems.push('auth: no way to authenticate callers; configure auth.apiKeys or auth.oauth (or, on a loopback listener only, auth.anonymous: true)');
  }
  const hosts = listenerHostProblems(config);
  problems.push(...hosts);
  // A malformed listen.host is the mistake to name, not the anonymous access it makes look non-loopback.
  if (auth.anonymous && !isLoopback(config.listen.host) && listenerHostProblem('listen.host', config.listen.host) === undefined) {
    problems.push(`auth.anonymous: anonymous access is allowed only on a loopback listener, not on "${config.listen.host}"`);
  }
  auth.apiKeys.forEach((k, i) => {
    if (k.expires !== undefined && !absentSecret(k.expires) && expiryOf(k.expires) === -Infinity) problems.push(`auth.apiKeys[${i}].expires: "${k.expires}" (key "${k.id}") is not a real date or time; write YYYY-MM-DD or an RFC 3339 timestamp that exists`);
  });
  auth.apiKeyPrefixes.forEach((prefix, i) => {
    // Every JWT starts with eyJ (base64url of `{"`): such a prefix would refuse every access token as a wrong key.
    if (/^e(y(J.*)?)?$/.test(prefix)) problems.push(`auth.apiKeyPrefixes[${i}]: "${prefix}" is how JWTs (access tokens) start; every token would be refused as a wrong API key. Choose a prefix the issuer's tokens never have`);
  });
  const ids = auth.apiKeys.map((k) => k.id);
  for (const id of new Set(ids.filter((id, i) => ids.indexOf(id) !== i))) problems.push(`auth.apiKeys: the id "${id}" is used twice`);
  if (auth.oauth) {
    // RFC 8707 / 2026-07-28 authorization §Token Handling: tokens must be minted for this resource. The
    // metadata names listen.publicUrl as the resource, clients ask for tokens for exactly that string,
    // and the aud check is exact: so the two must be the same string.
    const publicUrl = config.listen.publicUrl;
    if (publicUrl === undefined) problems.push('auth.oauth: listen.publicUrl is required (it is the OAuth resource and the expected token audience)');
    else if (auth.oauth.audience !== publicUrl && !absentSecret(auth.oauth.audience) && !absentSecret(publicUrl)) {
      const hint = canonicalResource(auth.oauth.audience) === canonicalResource(publicUrl) ? ' (they differ only in case or a trailing slash; write them the same way)' : '';
      problems.push(`auth.oauth.audience: must equal listen.publicUrl ("${publicUrl}"), the resource tokens are minted for${hint}`);
    }
  }
  for (const [i, rule] of config.policy.rules.entries()) {
    if (rule.tools === undefined && rule.prompts === undefined && rule.resources === undefined) problems.push(`policy.rules[${i}]: names no tools, prompts or resources, so it can never apply`);
  }
  problems.push(...hiddenKinds(config.policy.rules));
  // An entry that is a secret absent here is left out, by index, so the others keep theirs.
  problems.push(...trustedProxyProblems(config.listen.trustedProxies.map((e) => (absentSecret(e) ? '127.0.0.1' : e))));
  problems.push(...allowListProblems(config.listen));
  const { ssePath, path } = config.listen;
  if (ssePath !== undefined && (ssePath === path || `${ssePath.replace(/\/+$/, '')}/messages` === path || ssePath.includes('?') || ssePath.includes('#'))) {
    problems.push(`listen.ssePath: "${ssePath}" must be a plain path other than listen.path ("${path}"), and its messages endpoint (ssePath + /messages) too`);
  }
  problems.push(...policyProblems(config.policy));
  problems.push(...toolRefProblems(config));
  // A URL still reading `${...}` is a secret absent here (check-config --env-optional): nothing to judge.
  if (config.store.kind === 'redis' && !config.store.url.startsWith('rediss://') && !config.store.url.startsWith('${')) {
    if (config.store.tls !== undefined) problems.push('store.tls: applies to TLS connections only; write the URL as rediss://');
    if (config.store.sentinel?.servername !== undefined) problems.push('store.sentinel.servername: applies to TLS connections only; write the URL as rediss://');
  }
  if (config.store.kind === 'redis') problems.push(...redisCredentialProblems(config.store.url));
  problems.push(...storeTlsProblems(config.store));
  problems.push(...adminProblems(config));
  problems.push(...listenerClashes(config));
  problems.push(...urlProblems(config));
  problems.push(...uriPrefixProblems(config));
  problems.push(...reservedUpstreamNames(config));
  problems.push(...headerProblems(config));
  problems.push(...stdioProblems(config));
  problems.push(...timerProblems(config));
  return problems;
}

const KIND_WORD = { tools: 'tool', prompts: 'prompt', resources: 'resource' } as const;

/**
 * Once rules name a kind, what they do not allow of it is hidden (policy/access.ts). Rules that deny some
 * tools and allow none, a first policy meant as "everything but deletes", hid every tool from every caller
 * and checked clean. A deny of "*" itself says that is meant.
 */
function hiddenKinds(rules: GatehouseConfig['policy']['rules']): string[] {
  const problems: string[] = [];
  for (const kind of ['tools', 'prompts', 'resources'] as const) {
    const naming = rules.filter((r) => r[kind] !== undefined);
    if (naming.length === 0 || naming.some((r) => r.access === 'allow' || (r.access === 'deny' && r[kind]!.includes('*')))) continue;
    const word = KIND_WORD[kind];
    problems.push(`policy.rules: no rule allows any ${word}, so every ${word} is hidden from every caller (once rules name ${kind}, what they do not allow is hidden); add { access: allow, ${kind}: ["*"] } after the deny rules to let the rest through`);
  }
  return problems;
}

/**
 * What an HTTP field value may hold (RFC 9110 §5.5: visible characters, spaces and tabs, and obs-text, which
 * Node and undici take as Latin-1): the same test both apply before they send a request.
 */
const UNSENDABLE_IN_HEADER = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * Headers sent as configured (an upstream's credentials, the trace backend's key) are strings to the schema;
 * one with a line break or a character a header cannot carry, often a secret read through `${file:...}`
 * with an extra newline, passed every check and then failed every request it went on (each tools/call a 502,
 * a reload trading a working config for it).
 */
function headerProblems(config: GatehouseConfig): string[] {
  const headers: Array<[Array<string | number>, Record<string, string> | undefined]> = [[['tracing', 'headers'], config.tracing.headers]];
  config.upstreams.forEach((u, i) => {
    if ('url' in u) headers.push([['upstreams', i, 'headers'], u.headers]);
  });
  const problems: string[] = [];
  for (const [path, values] of headers) {
    for (const [name, value] of Object.entries(values ?? {})) {
      // The value is not repeated: it is usually a credential.
      if (UNSENDABLE_IN_HEADER.test(value)) problems.push(`${formatPath([...path, name])}: holds a line break, a control character or a character outside Latin-1, which a header cannot carry (a secret file read with \${file:...} may end with a blank line; only one final newline is dropped)`);
    }
  }
  return problems;
}

/**
 * A resources/read of a URI no list showed goes to the upstream whose uriPrefixes match it, the longest
 * first. The same prefix on two upstreams left the choice to the order of the file: reads went, silently,
 * to the first, and the other's claim was never used. It is refused, as a choice the operator must make.
 */
function uriPrefixProblems(config: GatehouseConfig): string[] {
  const problems: string[] = [];
  const claimed = new Map<string, string>();
  config.upstreams.forEach((u, i) => {
    (u.uriPrefixes ?? []).forEach((prefix, j) => {
      const owner = claimed.get(prefix);
      if (owner !== undefined && owner !== u.name) problems.push(`${formatPath(['upstreams', i, 'uriPrefixes', j])}: "${prefix}" is a prefix of upstream "${owner}" too; a resource URI it matches could go to either. Give each prefix to one upstream (a longer prefix may carve part of another's out)`);
      else claimed.set(prefix, u.name);
    });
  });
  return problems;
}

/**
 * Upstream names Gatehouse writes itself where the upstreams' names go, in the metrics' `upstream` label,
 * the logs and the spans: an upstream so named could not be told from what the label means there. The
 * label values stay as they were (dashboards and alerts query them); the name is refused instead, at
 * load, check-config and reload alike, before anything is counted under it.
 */
const RESERVED_UPSTREAM_NAMES: ReadonlyMap<string, string> = new Map([
  // policy/egress/proxy.ts: an egress proxy request no upstream's credentials name.
  ['unknown', 'the egress proxy counts and logs connections it cannot attribute to an upstream as upstream "unknown" (gatehouse_egress_proxy_requests_total)'],
  // catalog/catalog-upstream.ts: with several upstreams, what the catalog answers itself (merged lists, unknown names).
  ['catalog', 'with several upstreams, the calls the catalog answers itself (merged lists, unknown names) are counted and logged as upstream "catalog" (gatehouse_requests_total)'],
]);

function reservedUpstreamNames(config: GatehouseConfig): string[] {
  const problems: string[] = [];
  config.upstreams.forEach((u, i) => {
    const why = RESERVED_UPSTREAM_NAMES.get(u.name);
    if (why !== undefined) problems.push(`${formatPath(['upstreams', i, 'name'])}: "${u.name}" is reserved: ${why}, which this upstream's would be mixed with. Choose another name`);
  });
  return problems;
}

const NUL_PROBLEM = 'holds a NUL character, which a command, an argument, an environment variable or a directory cannot (the process could not be started; a secret file read with ${file:...} may hold one)';

/**
 * A stdio upstream's command, arguments, environment and working directory reach the operating system as C
 * strings, which a NUL ends: Node refuses to spawn with one (ERR_INVALID_ARG_VALUE). The schema takes any
 * string, and a secret read through `${file:...}` or `${env:...}` may bring one in: until 4 December such a
 * config checked clean, started and was applied by a reload, and the upstream failed at its first child.
 */
function stdioProblems(config: GatehouseConfig): string[] {
  const problems: string[] = [];
  config.upstreams.forEach((u, i) => {
    if (!('command' in u)) return;
    // The value is not repeated: an argument or a variable may be a credential.
    u.command.forEach((part, j) => {
      if (part.includes('\0')) problems.push(`${formatPath(['upstreams', i, 'command', j])}: ${NUL_PROBLEM}`);
    });
    // Names are the schema's (letters, digits and _); values are anything a secret brings in.
    for (const [name, value] of Object.entries(u.env)) {
      if (value.includes('\0')) problems.push(`${formatPath(['upstreams', i, 'env', name])}: ${NUL_PROBLEM}`);
    }
    if (u.cwd?.includes('\0')) problems.push(`${formatPath(['upstreams', i, 'cwd'])}: ${NUL_PROBLEM}`);
  });
  return problems;
}

/** name:digits or [IPv6]:digits; an IPv6 address without brackets is told apart below. */
const PORTED_HOST = /^(\[[^\]]*\]|[^:[\]]+):\d*$/;

/** scheme://host[:port], as a browser sends Origin (a trailing slash is forgiven: the guard drops it). */
const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\s]+\/?$/i;

/**
 * Entries the DNS-rebinding guard (edge/origin-guard.ts) can never match: it compares a Host header as
 * name[:port] (an IPv6 address in brackets, as Host carries it), and an Origin as browsers send it. Listed,
 * such an entry also ends the loopback names' default. Until 5 December a port was not compared at all, so
 * "localhost:8080" was refused here; it now means that port only.
 */
function allowListProblems(listen: GatehouseConfig['listen']): string[] {
  const problems: string[] = [];
  listen.allowedHosts.forEach((host, i) => {
    const key = `listen.allowedHosts[${i}]`;
    // A value still reading `${...}` is a secret absent here (check-config --env-optional): nothing to judge.
    if (host === '*' || host.includes('${')) return;
    if (host.includes('/')) problems.push(`${key}: "${host}" is a URL; list the host name alone (mcp.example.com), without scheme or path`);
    else if (PORTED_HOST.test(host)) {
      const port = host.slice(host.lastIndexOf(':') + 1);
      if (!/^[1-9]\d{0,4}$/.test(port) || Number(port) > 65535) problems.push(`${key}: "${host}" names no port a Host header can carry; write name:port with a port from 1 to 65535 (localhost:8080), or the name alone for any port`);
    } else if (host.includes(':') && !host.startsWith('[')) problems.push(`${key}: "${host}" is an IPv6 address without brackets; a Host header carries it as "[${host}]"`);
  });
  listen.allowedOrigins.forEach((origin, i) => {
    // "null" is what sandboxed frames and file: pages send.
    if (origin === '*' || origin.toLowerCase() === 'null' || ORIGIN.test(origin) || origin.includes('${')) return;
    problems.push(`listen.allowedOrigins[${i}]: "${origin}" is not an origin as browsers send it; write scheme://host[:port] (https://app.example.com), without a path`);
  });
  return problems;
}

/** The longest a Node timer waits: past it, setTimeout fires after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The `...Ms` settings, and the per-tool limits of `timeouts.tools`, are waited for with timers (some on some
 * transports only); one longer than a timer holds would end at once (a shutdown.graceMs of 9999999999 cut
 * every call in flight at stop, an idle or input timeout would end sessions and questions at once).
 */
function timerProblems(config: GatehouseConfig): string[] {
  const problems: string[] = [];
  const visit = (value: unknown, path: Array<string | number>): void => {
    if (typeof value === 'number') {
      const key = path.at(-1);
      const perTool = path.at(-2) === 'tools' && path.at(-3) === 'timeouts';
      // requestStateTtlMs only dates the states it seals: no timer waits for it.
      if ((perTool || (typeof key === 'string' && key.endsWith('Ms') && key !== 'requestStateTtlMs')) && value > MAX_TIMER_MS) {
        problems.push(`${formatPath(path)}: at most ${MAX_TIMER_MS} ms (about 24.8 days), the longest wait a timer holds; a longer one would end at once`);
      }
    } else if (Array.isArray(value)) {
      value.forEach((v, i) => visit(v, [...path, i]));
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, v] of Object.entries(value)) visit(v, [...path, key]);
    }
  };
  visit(config, []);
  return problems;
}

/**
 * The schema's URL patterns check the scheme and the shape; a port past 65535 or an unclosed IPv6 bracket
 * passes them, and the first `new URL` of it, when the gateway builds its upstream or key cache, throws.
 */
function urlProblems(config: GatehouseConfig): string[] {
  const urls: Array<[string, string | undefined]> = [['listen.publicUrl', config.listen.publicUrl]];
  config.upstreams.forEach((u, i) => {
    if ('url' in u) urls.push([`upstreams[${i}].url`, u.url], [`upstreams[${i}].clientCredentials.tokenUrl`, u.clientCredentials?.tokenUrl]);
  });
  const oauth = config.auth.oauth;
  if (oauth) {
    urls.push(['auth.oauth.issuer', oauth.issuer], ['auth.oauth.jwksUri', oauth.jwksUri], ['auth.oauth.introspection.url', oauth.introspection?.url]);
    (oauth.authorizationServers ?? []).forEach((a, i) => urls.push([`auth.oauth.authorizationServers[${i}]`, a]));
  }
  if (config.tracing.enabled) urls.push(['tracing.endpoint', config.tracing.endpoint]);
  if (config.store.kind === 'redis') urls.push(['store.url', config.store.url]);
  const problems: string[] = [];
  for (const [key, url] of urls) {
    // A value still reading `${...}` is a secret absent here (check-config --env-optional): nothing to judge.
    if (url === undefined || url.includes('${') || URL.canParse(url)) continue;
    // The value is not repeated: it may hold an interpolated credential (userinfo, a query token).
    problems.push(`${key}: not a URL that can be used (a port above 65535, a bracket left open, a character a URL cannot hold?)`);
  }
  return problems;
}

/**
 * The Redis store percent-decodes store.url's user name and password, as URLs require: one holding a % that
 * begins no %XX (a password such as "50%off" written as it is) threw "URI malformed" when the gateway was
 * built, after check-config had said ok. Said by key; the value is a credential and is not repeated.
 */
function redisCredentialProblems(url: string): string[] {
  if (url.includes('${') || !URL.canParse(url)) return [];
  const u = new URL(url);
  const parts = [['user name', u.username], ['password', u.password]] as const;
  return parts
    .filter(([, text]) => percentDecoded(text) === undefined)
    .map(([part]) => `store.url: its ${part} holds a % that begins no percent-encoding (%XX): write a % in it as %25, and @ : / # ? as %40 %3A %2F %23 %3F`);
}

/** What the schema cannot judge in the policy lists: CIDRs, ids used twice, per-ip limits that name tools, budgets no call fits. */
function policyProblems(policy: GatehouseConfig['policy']): string[] {
  const problems: string[] = [];
  // policy.rules' ids are optional, but one that is given names the rule in refusals and audit records as
  // the other lists' do: two rules of one id made a record that cannot tell which rule refused.
  const lists = { rules: policy.rules, egress: policy.egress, rateLimits: policy.rateLimits, budgets: policy.budgets, breakers: policy.breakers, approvals: policy.approvals } as const;
  for (const [name, entries] of Object.entries(lists)) {
    const ids = entries.flatMap((e: { id?: string }) => (e.id !== undefined ? [e.id] : []));
    for (const id of new Set(ids.filter((id, i) => ids.indexOf(id) !== i))) problems.push(`policy.${name}: the id "${id}" is used twice; refusals name entries by id`);
  }
  policy.egress.forEach((rule, i) => {
    for (const side of ['allow', 'deny'] as const) {
      (rule[side]?.cidrs ?? []).forEach((c, j) => {
        const problem = absentSecret(c) ? undefined : cidrProblem(c);
        if (problem) problems.push(`policy.egress[${i}].${side}.cidrs[${j}]: ${problem}`);
      });
    }
    if (rule.allow === undefined && rule.deny === undefined) problems.push(`policy.egress[${i}]: gives neither allow nor deny, so it changes nothing`);
  });
  policy.budgets.forEach((b, i) => {
    // No window would ever have room for one call: every call it selects would be refused, budget_exhausted.
    const cost = b.cost ?? 1;
    if (cost > b.limit) problems.push(`policy.budgets[${i}] ("${b.id}"): a call costs ${cost}, more than the limit ${b.limit}, so no call could ever run; raise limit or lower cost`);
  });
  policy.rateLimits.forEach((limit, i) => {
    if (limit.per === 'ip' && (limit.tools !== undefined || limit.annotations !== undefined)) problems.push(`policy.rateLimits[${i}]: a per: ip limit is applied before the body is read, so it cannot select tools or annotations`);
  });
  return problems;
}

/** Hosts that bind every address of their family, so they overlap any other host on the same port. */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '']);

/**
 * Gatehouse's own listeners (the MCP endpoint, metrics, the admin API, the egress proxy) each need a port of their own where
 * their hosts overlap (the same host, or a wildcard): two on one port passed every check and then failed
 * every start with "port in use". Port 0 picks a free port, so it never clashes.
 */
function listenerClashes(config: GatehouseConfig): string[] {
  const listeners: Array<{ key: string; what: string; host: string; port: number }> = [{ key: 'listen', what: 'the MCP endpoint', host: config.listen.host, port: config.listen.port }];
  if (config.metrics.enabled) listeners.push({ key: 'metrics', what: 'metrics', host: config.metrics.host, port: config.metrics.port });
  if (config.admin.enabled) listeners.push({ key: 'admin', what: 'the admin API', host: config.admin.host, port: config.admin.port });
  const proxy = config.policy.egressProxy;
  if (proxy.enabled) listeners.push({ key: 'policy.egressProxy', what: 'the egress proxy', host: proxy.host, port: proxy.port });
  const problems: string[] = [];
  listeners.forEach((later, i) => {
    const earlier = listeners.slice(0, i).find((l) => l.port !== 0 && l.port === later.port && (l.host === later.host || WILDCARD_HOSTS.has(l.host) || WILDCARD_HOSTS.has(later.host)));
    if (earlier !== undefined) problems.push(`${later.key}.port: ${later.what} has its own listener, and ${earlier.key}.port (${earlier.what}) already takes port ${later.port} on an overlapping host; choose another port`);
  });
  return problems;
}

/** The admin API needs a way to tell reviewers apart from everyone else, and approvals need the admin API. */
function adminProblems(config: GatehouseConfig): string[] {
  const problems: string[] = [];
  const { admin } = config;
  if (admin.enabled) {
    if (admin.token === undefined && admin.groups.length === 0) problems.push('admin.enabled: the admin API needs admin.token, or admin.groups with auth.oauth, to know who may use it');
    if (admin.groups.length > 0 && config.auth.oauth === undefined) problems.push('admin.groups: groups come from OAuth access tokens; configure auth.oauth, or use admin.token');
  }
  const reviewed = config.policy.approvals.some((a) => a.by === 'reviewer' || a.by === 'user');
  if (reviewed && !admin.enabled) problems.push('policy.approvals: reviewers decide through the admin API (and user confirmations fall back to them); set admin.enabled: true with admin.token or admin.groups');
  if (config.tools.pinning === 'enforce' && !admin.enabled) problems.push('tools.pinning: enforce refuses changed tools until a reviewer accepts them through the admin API; set admin.enabled: true');
  // An entry naming no one would let any admin accept its tools' changes: the opposite of what it reads as.
  config.tools.pinningReviewers.forEach((e, i) => {
    if (e.reviewers.subjects.length === 0 && e.reviewers.groups.length === 0) problems.push(`tools.pinningReviewers[${i}].reviewers: name at least one subject or group; an entry naming no one would let any admin accept the changes of ${e.tools.join(', ')}`);
  });
  // Reviewers named where no access token reaches the admin API (admin.groups empty) could never act.
  return problems;
}

/** RFC 8707 §2 / 2026-07-28 authorization §Canonical Server URI: case-insensitive scheme and host, no trailing slash. */
function canonicalResource(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/$/, '')}${u.search}`;
  } catch {
    return url;
  }
}

