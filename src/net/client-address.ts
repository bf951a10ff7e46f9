// Which address a request comes from, for the limits kept per client address. Normally the connection's
// peer; behind proxies the operator lists (`listen.trustedProxies`), the last X-Forwarded-For hop that is
// not one of them. An address a client could choose freely is never believed: a peer that is not a
// trusted proxy is the client, whatever it claims. IPv6 clients are counted by their /64, the smallest
// block one customer is usually given, so rotating addresses within it does not escape a limit.

import { BlockList, isIP } from 'node:net';

export type ClientAddressOf = (peer: string | undefined, forwardedFor: string | string[] | undefined) => string;

/** Problems with `trustedProxies` entries, for the config checks. */
export function trustedProxyProblems(entries: readonly string[]): string[] {
  const problems: string[] = [];
  entries.forEach((entry, i) => {
    if (parseEntry(entry) === undefined) problems.push(`listen.trustedProxies[${i}]: "${entry}" is not an IP address or CIDR range`);
  });
  return problems;
}

/** Builds the resolver once per config. */
export function compileClientAddress(trustedProxies: readonly string[]): ClientAddressOf {
  if (trustedProxies.length === 0) return (peer) => limitKey(peer ?? '');
  const trusted = new BlockList();
  for (const entry of trustedProxies) {
    const parsed = parseEntry(entry);
    if (parsed === undefined) continue; // refused by the config checks before this runs
    if (parsed.prefix === undefined) trusted.addAddress(parsed.address, parsed.family);
    else trusted.addSubnet(parsed.address, parsed.prefix, parsed.family);
  }
  const isTrusted = (address: string): boolean => {
    const family = isIP(address);
    return family !== 0 && trusted.check(address, family === 4 ? 'ipv4' : 'ipv6');
  };
  return (peer, forwardedFor) => {
    let client = unmapped(peer ?? '');
    if (!isTrusted(client) || forwardedFor === undefined) return limitKey(client);
    // Hops are appended left to right; walk back from the nearest until one is not a trusted proxy.
    const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hopAddress(hops[i]!);
      // Unreadable: stop at the last address vouched for. Nothing farther is believed (a client writes those).
      if (hop === undefined) break;
      client = hop;
      if (!isTrusted(hop)) break;
    }
    return limitKey(client);
  };
}

/** The key a client address is counted under: IPv4 as it is, IPv6 by its /64. */
export function limitKey(address: string): string {
  const plain = unmapped(address);
  if (isIP(plain) !== 6) return plain;
  return `${expandIpv6(plain).slice(0, 4).join(':')}::/64`;
}

/** `a.b.c.d:port`, and IPv6 in brackets with or without `:port`. */
const WITH_PORT = /^(?:(\d{1,3}(?:\.\d{1,3}){3})|\[([^\]]+)\])(?::(\d{1,5}))?$/;

/**
 * The address of one X-Forwarded-For hop, or undefined when it is none. Some proxies write the client's
 * port too (`203.0.113.5:4711`, `[2001:db8::1]:443`): read as no address, such a hop stopped the walk at the
 * proxy, and every client behind it was counted as that one proxy. A bare IPv6 address is taken whole (its
 * last group is never read as a port: `2001:db8::1:443` is an address).
 */
function hopAddress(hop: string): string | undefined {
  const text = hop.trim();
  if (isIP(text) !== 0) return unmapped(text);
  const m = WITH_PORT.exec(text);
  if (m === null) return undefined;
  const [, v4, v6, port] = m;
  if (port !== undefined && Number(port) > 65_535) return undefined;
  if (v4 !== undefined) return port !== undefined && isIP(v4) === 4 ? v4 : undefined;
  return isIP(v6!) === 6 ? unmapped(v6!) : undefined;
}

function unmapped(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

/** The eight groups of an IPv6 address, `::` expanded (zone ids dropped). */
function expandIpv6(address: string): string[] {
  const bare = address.split('%')[0]!;
  const [head, tail] = bare.includes('::') ? bare.split('::') as [string, string] : [bare, undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.map((g) => (g.includes('.') ? g : g.toLowerCase().replace(/^0+(?=.)/, '')));
}

function parseEntry(entry: string): { address: string; prefix?: number; family: 'ipv4' | 'ipv6' } | undefined {
  const [address, prefixText, extra] = entry.trim().split('/');
  if (address === undefined || extra !== undefined) return undefined;
  const family = isIP(address);
  if (family === 0) return undefined;
  const name = family === 4 ? 'ipv4' : 'ipv6';
  if (prefixText === undefined) return { address, family: name };
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  if (prefix > (family === 4 ? 32 : 128)) return undefined;
  return { address, prefix, family: name };
}
