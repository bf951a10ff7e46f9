// The egress decision for one destination (a URL, host or address found in a call's arguments, or a
// connection the egress proxy is asked for), under the first egress rule that selects the call:
//   1. a rule's `deny` that matches blocks it;
//   2. a rule's `allow` must match it (host or address, scheme, port), or it is blocked;
//   3. loopback, link-local, metadata, private, unspecified, multicast and reserved addresses are blocked
//      unless an `allow` names them by address (`cidrs`, or an IP literal in `hosts`), whatever rule applies.
// Names are resolved (A and AAAA) and every address is judged, so a name that points at 127.0.0.1 is
// caught; a name that does not resolve is blocked (the upstream could not reach it either, and a checker
// that lets unknown names through can be raced with DNS).

import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { growingLru } from '../../lru.js';
import type { EgressRule, EgressTarget } from '../../config/schema.generated.js';
import type { Principal } from '../../pipeline/principal.js';
import type { Route } from '../../pipeline/context.js';
import { compileSelector, firstMatch, type Selector } from '../selector.js';
import { canonicalIp, classify, compileCidrs, embeddedIpv4, METADATA_HOSTS, type AddressClass } from '../../net/addresses.js';
import { defaultPortOf, HOSTLESS_SCHEMES, type Destination } from './destinations.js';

/** Resolves a host name to its addresses (A and AAAA); injectable for tests. */
export type ResolveHost = (host: string) => Promise<string[]>;

const RESOLVE_TIMEOUT_MS = 2_000;

export const systemResolver: ResolveHost = async (host) => {
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`resolving ${host} took longer than ${RESOLVE_TIMEOUT_MS} ms`)), RESOLVE_TIMEOUT_MS).unref());
  const found = await Promise.race([lookup(host, { all: true, verbatim: true }), timeout]);
  return found.map((a) => a.address);
};

interface CompiledTarget {
  hosts?: Array<(host: string) => boolean>;
  cidrs?: (address: string) => boolean;
  schemes?: Set<string>;
  /**
   * Whether `schemes` lists one that reaches a host over the network (http, ssh…), not only HOSTLESS_SCHEMES
   * (file, javascript…): only then can it describe a destination that has no scheme (see matches).
   */
  networkSchemes: boolean;
  ports?: Set<number>;
  /** Addresses it names explicitly (IP literals in hosts), which special ranges yield to. */
  literalAddresses: Set<string>;
}

interface CompiledRule {
  id: string;
  selector: Selector;
  allow?: CompiledTarget;
  deny?: CompiledTarget;
}

/** Why a destination is blocked: the rule (or `default`) and a sentence for the model. */
export interface EgressBlock {
  rule: string;
  reason: string;
  address?: string;
  addressClass?: AddressClass;
}

export class EgressPolicy {
  private readonly rules: CompiledRule[];
  private readonly cache = growingLru<string, Promise<string[]>>(2_000, { ttl: 30_000 });

  constructor(
    rules: readonly EgressRule[],
    private readonly resolve: ResolveHost = systemResolver,
  ) {
    this.rules = rules.map((r) => ({ id: r.id, selector: compileSelector(r), ...(r.allow ? { allow: compileTarget(r.allow) } : {}), ...(r.deny ? { deny: compileTarget(r.deny) } : {}) }));
  }

  /** The rule that governs a call (undefined: the defaults alone). */
  ruleFor(principal: Principal, route: Route | undefined): CompiledRule | undefined {
    return firstMatch(this.rules, principal, route);
  }

  /**
   * The rule for an upstream's own connections (the egress proxy), which belong to no caller and no one
   * tool: the first rule that selects no caller and whose tool globs, if any, cover the whole upstream
   * (`crm/*`, `*`).
   */
  ruleForUpstream(upstream: string | undefined): CompiledRule | undefined {
    const whole = wholeUpstream(upstream ?? '');
    return this.rules.find((r) => r.selector.matches(NO_CALLER, whole));
  }

  /**
   * The rule for a resources/read: a resource is no tool, and what reads it is its upstream, so the first
   * rule that selects the caller and whose tool globs, if any, cover the whole upstream the URI is read
   * from (`web/*`, `*`), as for the upstream's own connections above. A rule naming single tools
   * (`web/fetch`) or annotations is about those tools, not about the upstream's resources. `upstream`
   * undefined (no upstream reads the URI): only rules that name no tools.
   */
  ruleForResource(principal: Principal, upstream: string | undefined): CompiledRule | undefined {
    return firstMatch(this.rules, principal, upstream === undefined ? undefined : wholeUpstream(upstream));
  }

  /** Undefined when the destination may be reached; otherwise why not. */
  async check(d: Omit<Destination, 'path' | 'value'>, rule: CompiledRule | undefined): Promise<EgressBlock | undefined> {
    if (d.host === '' && d.scheme !== undefined) return hostlessBlock(rule, d.scheme);
    const decided = await this.decide(d, rule);
    return 'block' in decided ? decided.block : undefined;
  }

  /**
   * Why the rule refuses a CONNECT tunnel to `port` by its schemes, if it does (the egress proxy). A tunnel
   * carries bytes the proxy cannot read, so it has no scheme to judge; under an allow listing schemes it is
   * taken as one of them only on that scheme's default port (443 for https and wss, 80 for http, 22 for
   * ssh), or on a port the allow lists itself (https on 8443). Any other port would carry what the rule
   * does not allow (ssh, redis, smtp) unseen. The rest (hosts, ports, addresses, a deny) is decide()'s, with
   * no scheme.
   */
  tunnelBlock(rule: CompiledRule | undefined, port: number): EgressBlock | undefined {
    const schemes = rule?.allow?.schemes;
    if (rule === undefined || schemes === undefined || rule.allow?.ports?.has(port) === true) return undefined;
    for (const scheme of schemes) if (defaultPortOf(scheme) === port) return undefined;
    return { rule: rule.id, reason: `rule "${rule.id}" does not allow it (a tunnel to port ${port} is none of its schemes' ports: ${[...schemes].join(', ')})` };
  }

  /**
   * The verdict and, when allowed, the addresses it was judged on: a connection is then made to one of
   * them, so a name cannot resolve to another address between the check and the connect.
   */
  async decide(d: Omit<Destination, 'path' | 'value'>, rule: CompiledRule | undefined): Promise<{ block: EgressBlock } | { addresses: string[] }> {
    const block = (b: EgressBlock) => ({ block: b });
    const ruleId = rule?.id ?? 'default';
    const literal = canonicalIp(d.host);
    if (rule?.deny && (await this.matches(rule.deny, d, literal, 'deny'))) return block({ rule: ruleId, reason: `rule "${ruleId}" denies it` });
    if (rule?.allow && !(await this.matches(rule.allow, d, literal, 'allow'))) return block({ rule: ruleId, reason: `rule "${ruleId}" does not allow it` });
    if (literal === undefined && METADATA_HOSTS.has(d.host)) {
      if (!rule?.allow?.hosts?.some((h) => h(d.host))) return block({ rule: ruleId, reason: `"${d.host}" is a cloud metadata name`, addressClass: 'metadata' });
    }
    let addresses: string[];
    if (literal !== undefined) addresses = [literal];
    else {
      try {
        addresses = (await this.addressesOf(d.host)).map((a) => canonicalIp(a) ?? a);
      } catch {
        addresses = [];
      }
      // A name read as a host by its shape alone (destinations.ts `guess`: a file name in free text, a custom
      // scheme's identifier) that resolves nowhere is no destination. The cost: such a name's DNS could be
      // made to answer only after this check; a name the arguments plainly give as a destination (a URL of
      // a fetched scheme, a destination field) is still blocked unresolved.
      if (addresses.length === 0) return d.guess === true ? { addresses } : block({ rule: ruleId, reason: `"${d.host}" could not be resolved` });
    }
    for (const address of addresses) {
      const cls = classify(address);
      if (cls === 'public') continue;
      const named = rule?.allow !== undefined && (rule.allow.literalAddresses.has(address) || rule.allow.cidrs?.(address) === true);
      if (named) continue;
      const via = literal === undefined ? ` ("${d.host}" resolves to ${address})` : '';
      return block({ rule: ruleId, reason: `${address} is a ${cls} address${via}; only an egress rule naming it by address allows it`, address, addressClass: cls });
    }
    return { addresses };
  }

  /**
   * Whether a target names the destination. A `deny` that names an address by IP also names every host
   * name that resolves to it (`localhost` for `127.0.0.1`): what it blocks is the address, however reached.
   * An `allow` stays literal: a name is let through by its own name or by `cidrs`.
   */
  private async matches(t: CompiledTarget, d: Omit<Destination, 'path' | 'value'>, literal: string | undefined, side: 'allow' | 'deny'): Promise<boolean> {
    if (t.schemes) {
      // A destination with no scheme (a bare host, a CONNECT tunnel) may be reached by any network scheme:
      // an allow leaves it to its other dimensions (a tunnel's port: tunnelBlock), and a deny matches it
      // when it lists a network scheme. A deny of file: or javascript: alone is about such URLs, never a
      // host reached otherwise (until 5 December it refused every bare host and every tunnel).
      if (d.scheme !== undefined ? !t.schemes.has(d.scheme) : side === 'deny' && !t.networkSchemes) return false;
    }
    if (t.ports) {
      // A URL naming no port, of a scheme whose default Gatehouse does not know (memcached://, rtsp://),
      // reaches a port no allow can be said to name: refused by a port list rather than passed. A bare host
      // (no scheme) leaves the port to the tool, as before; a deny names only the ports it lists.
      if (d.port === undefined ? side === 'allow' && d.scheme !== undefined : !t.ports.has(d.port)) return false;
    }
    if (t.hosts === undefined && t.cidrs === undefined) return true;
    if (t.hosts?.some((h) => h(literal ?? d.host))) return true;
    if (side === 'deny' && t.literalAddresses.size > 0) {
      if (literal !== undefined) {
        if (carriesNamed(t.literalAddresses, literal)) return true;
      } else {
        let addresses: string[];
        try {
          addresses = await this.addressesOf(d.host);
        } catch {
          // Not resolvable: decide() blocks it anyway.
          return true;
        }
        if (addresses.some((a) => t.literalAddresses.has(canonicalIp(a) ?? a) || carriesNamed(t.literalAddresses, canonicalIp(a) ?? a))) return true;
      }
    }
    if (t.cidrs) {
      let addresses: string[];
      try {
        addresses = literal !== undefined ? [literal] : await this.addressesOf(d.host);
      } catch {
        return false;
      }
      // Every address a name resolves to must be in range: one outside would be reachable too.
      if (addresses.length > 0 && addresses.every((a) => t.cidrs!(canonicalIp(a) ?? a))) return true;
    }
    return false;
  }

  private addressesOf(host: string): Promise<string[]> {
    let found = this.cache.get(host);
    if (!found) {
      found = this.resolve(host);
      this.cache.set(host, found);
      found.catch(() => this.cache.delete(host));
    }
    return found;
  }
}

/**
 * The verdict on a URL naming no host: a `file:` URL (the server's own files) or, in a destination field,
 * `data:`, `javascript:` and the like (destinations.ts hostlessUrl). No network destination, so no address
 * to classify and nothing to resolve. Its one dimension is its scheme: refused where the rule's allow lists
 * schemes without it (an operator's "https only" covers it) and it is one of HOSTLESS_SCHEMES, or its deny
 * lists it with no host or address (which it could not match); passed otherwise, by default too, so that a
 * rule about hosts does not stop a filesystem server's paths.
 */
function hostlessBlock(rule: CompiledRule | undefined, scheme: string): EgressBlock | undefined {
  if (rule === undefined) return undefined;
  const names = (t: CompiledTarget | undefined) => t !== undefined && t.schemes?.has(scheme) === true && t.hosts === undefined && t.cidrs === undefined;
  if (names(rule.deny)) return { rule: rule.id, reason: `rule "${rule.id}" denies it` };
  // Only a scheme a client acts on: `note:hello` or `urn:isbn:…` in a field named url is a label, which no
  // allow of schemes is about (until 5 December an https-only allow refused it). A deny naming it still does.
  if (rule.allow?.schemes && !rule.allow.schemes.has(scheme) && HOSTLESS_SCHEMES.has(scheme)) return { rule: rule.id, reason: `rule "${rule.id}" does not allow it (its schemes do not include ${scheme})` };
  return undefined;
}

/**
 * Whether an IPv6 address carries an IPv4 address a deny names (`::ffff:127.0.0.1`, NAT64, 6to4): a
 * dual-stack socket reaches the IPv4-mapped form at that very address, and a deny by cidrs looks through
 * these forms already (compileCidrs); a deny by IP in `hosts` does the same. Only IPv6 text is looked at.
 */
function carriesNamed(named: ReadonlySet<string>, address: string): boolean {
  if (!address.includes(':')) return false;
  const inner = embeddedIpv4(address);
  return inner !== undefined && named.has(inner);
}

/** A route standing for every item of an upstream, `upstream/*`: what a rule's tool globs must cover to govern the upstream. */
function wholeUpstream(upstream: string): Route {
  return { kind: 'tools', ref: `${upstream}/*`, publicName: '*', original: '*', upstream, listed: false, params: [] };
}

/** Matches only selectors that name no caller. */
const NO_CALLER: Principal = Object.freeze({ subject: '\u0000', scopes: [], groups: [], via: 'anonymous' as const });

function compileTarget(t: EgressTarget): CompiledTarget {
  const literalAddresses = new Set<string>();
  const hosts = t.hosts?.map((h) => {
    const ip = canonicalIp(h.toLowerCase());
    if (ip !== undefined) {
      literalAddresses.add(ip);
      return (host: string) => host === ip;
    }
    return hostMatcher(h);
  });
  const schemes = t.schemes?.map((s) => s.toLowerCase());
  return {
    ...(hosts ? { hosts } : {}),
    ...(t.cidrs ? { cidrs: compileCidrs(t.cidrs) } : {}),
    ...(schemes ? { schemes: new Set(schemes) } : {}),
    networkSchemes: schemes?.some((s) => !HOSTLESS_SCHEMES.has(s)) ?? false,
    ...(t.ports ? { ports: new Set(t.ports) } : {}),
    literalAddresses,
  };
}

/** `*` alone matches any host; `*.example.com` one or more labels before example.com; otherwise exact. */
function hostMatcher(pattern: string): (host: string) => boolean {
  const p = pattern.toLowerCase().replace(/\.+$/, '');
  if (p === '*') return () => true;
  const ascii = p.startsWith('*.') ? `*.${domainToAscii(p.slice(2))}` : domainToAscii(p);
  if (ascii.startsWith('*.')) {
    const suffix = ascii.slice(1);
    return (host) => isIP(host) === 0 && host.endsWith(suffix) && host.length > suffix.length;
  }
  return (host) => host === ascii;
}

function domainToAscii(name: string): string {
  try {
    return new URL(`http://${name}/`).hostname;
  } catch {
    return name;
  }
}
