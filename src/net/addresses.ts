// What an address is, for egress checks: loopback, link-local, cloud metadata, private, or public. IPv6
// forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4) are judged by that address
// too, so `[::ffff:127.0.0.1]` is loopback. Ranges from RFC 6890 (special-purpose registries) and the
// registry's later entries that are not globally reachable.

import { BlockList, isIP } from 'node:net';

export type AddressClass = 'loopback' | 'link-local' | 'metadata' | 'private' | 'unspecified' | 'multicast' | 'reserved' | 'public';

/** Cloud metadata endpoints: AWS/GCP/Azure/OpenStack (169.254.169.254), AWS IPv6, Alibaba. */
const METADATA_ADDRESSES = new Set(['169.254.169.254', 'fd00:ec2::254', '100.100.100.200', '169.254.170.2']);
/** Names that reach metadata services from inside a cloud. */
export const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'metadata', 'instance-data', 'instance-data.ec2.internal', 'metadata.azure.internal']);

function blocks(entries: Array<[string, number, 'ipv4' | 'ipv6']>): BlockList {
  const list = new BlockList();
  for (const [net, prefix, family] of entries) list.addSubnet(net, prefix, family);
  return list;
}

const CLASSES: Array<[Exclude<AddressClass, 'metadata' | 'public'>, BlockList]> = [
  ['unspecified', blocks([['0.0.0.0', 8, 'ipv4'], ['::', 128, 'ipv6']])],
  ['loopback', blocks([['127.0.0.0', 8, 'ipv4'], ['::1', 128, 'ipv6']])],
  ['link-local', blocks([['169.254.0.0', 16, 'ipv4'], ['fe80::', 10, 'ipv6']])],
  [
    'private',
    blocks([
      ['10.0.0.0', 8, 'ipv4'],
      ['172.16.0.0', 12, 'ipv4'],
      ['192.168.0.0', 16, 'ipv4'],
      ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT (shared address space)
      ['192.0.0.0', 24, 'ipv4'],
      ['198.18.0.0', 15, 'ipv4'],
      ['fc00::', 7, 'ipv6'], // unique local
      ['fec0::', 10, 'ipv6'], // site-local (deprecated, still routed by some)
      // Local-use IPv4/IPv6 translation (RFC 8215): a site's own NAT64 maps it onto IPv4 addresses of its
      // choosing, in positions its prefix length decides, so no one embedded address can be read out of it.
      ['64:ff9b:1::', 48, 'ipv6'],
    ]),
  ],
  ['multicast', blocks([['224.0.0.0', 4, 'ipv4'], ['ff00::', 8, 'ipv6']])],
  ['reserved', blocks([['240.0.0.0', 4, 'ipv4'], ['192.0.2.0', 24, 'ipv4'], ['198.51.100.0', 24, 'ipv4'], ['203.0.113.0', 24, 'ipv4'], ['100::', 64, 'ipv6'], ['2001:db8::', 32, 'ipv6'], ['3fff::', 20, 'ipv6'], ['5f00::', 16, 'ipv6']])], // documentation (RFC 9637 too), SRv6 SIDs (RFC 9602)
];

/** An IPv6 address as eight 16-bit groups, or undefined. */
function ipv6Groups(address: string): number[] | undefined {
  let a = address.toLowerCase();
  const zone = a.indexOf('%');
  if (zone !== -1) a = a.slice(0, zone);
  // A trailing dotted IPv4 part (::ffff:1.2.3.4) becomes two groups.
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (dotted) {
    const o = dotted[2]!.split('.').map(Number);
    a = `${dotted[1]}${((o[0]! << 8) | o[1]!).toString(16)}:${((o[2]! << 8) | o[3]!).toString(16)}`;
  }
  const halves = a.split('::');
  if (halves.length > 2) return undefined;
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const fill = 8 - head.length - tail.length;
  if (fill < 0 || (halves.length === 1 && fill !== 0)) return undefined;
  const groups = [...head, ...new Array<number>(fill).fill(0), ...tail];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/** The IPv4 address an IPv6 address carries, if it is of a form that does. */
export function embeddedIpv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  if (!g) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return v4(g[6]!, g[7]!); // ::ffff:a.b.c.d (IPv4-mapped)
  if (zeros(0, 6) && (g[6] !== 0 || g[7]! > 1)) return v4(g[6]!, g[7]!); // ::a.b.c.d (IPv4-compatible)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return v4(g[6]!, g[7]!); // 64:ff9b::/96 (NAT64)
  if (g[0] === 0x2002) return v4(g[1]!, g[2]!); // 2002::/16 (6to4)
  return undefined;
}

/**
 * The canonical text of an IP address (IPv6 compressed, lower case); undefined for non-addresses. An IPv6
 * zone id (`fe80::1%eth0`, `::1%25lo`) is dropped: it names an interface, not another host, and kept it
 * would make the address a string no IP in a rule equals (the WHATWG parser refuses it, so the egress proxy
 * judges such a CONNECT host as given, and a resolver answers it back with the zone).
 */
export function canonicalIp(address: string): string | undefined {
  let bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const zone = bare.indexOf('%');
  if (zone !== -1) {
    if (isIP(bare) !== 6) return undefined;
    bare = bare.slice(0, zone);
  }
  const family = isIP(bare);
  if (family === 4) return bare;
  if (family === 6) {
    try {
      return new URL(`http://[${bare}]/`).hostname.slice(1, -1);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** The class of an IP address (canonical text), looking through IPv6 forms that embed IPv4. */
export function classify(address: string): AddressClass {
  if (METADATA_ADDRESSES.has(address)) return 'metadata';
  const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
  const inner = family === 'ipv6' ? embeddedIpv4(address) : undefined;
  if (inner !== undefined) {
    const c = classify(inner);
    if (c !== 'public') return c;
  }
  for (const [name, list] of CLASSES) if (list.check(address, family)) return name;
  return 'public';
}

/** Whether an address lies in a CIDR range (`10.0.0.0/8`, `fd00::/8`, or a single address). */
export function compileCidrs(cidrs: readonly string[]): (address: string) => boolean {
  const list = new BlockList();
  for (const c of cidrs) {
    const [net, prefix] = c.split('/');
    const family = isIP(net!) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) list.addAddress(net!, family);
    else list.addSubnet(net!, Number(prefix), family);
  }
  return (address) => {
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (list.check(address, family)) return true;
    const inner = family === 'ipv6' ? embeddedIpv4(address) : undefined;
    return inner !== undefined && list.check(inner, 'ipv4');
  };
}

/** A problem with a CIDR string, for the config's semantic checks; undefined when it is valid. */
export function cidrProblem(cidr: string): string | undefined {
  const [net, prefix, extra] = cidr.split('/');
  const family = isIP(net ?? '');
  if (family === 0 || extra !== undefined) return `"${cidr}" is not an address or a CIDR range`;
  if (prefix !== undefined && !(/^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128))) return `"${cidr}" has a bad prefix length`;
  return undefined;
}
