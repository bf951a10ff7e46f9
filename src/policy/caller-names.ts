// The name a caller's counter goes under for a budget or rate limit `per: tenant` (and a budget `per: key`):
// the tenant (the key's id) as it is, or, for a caller without one, `-<via>:<subject>`. A tenant is a
// token's claim or an API key's config, and a key's id may start with "-" as well, so either could be
// written exactly as another caller's fallback and spend from that caller's counter. A name that starts
// with "-" therefore gets one more "-": the fallback starts with "-" and then a letter (a credential kind),
// an escaped name with "--", and a name that starts with neither is unchanged, so the counters of every
// usual tenant and key keep their keys in the store.

import type { Principal } from '../pipeline/principal.js';

/** `name`, made disjoint from every fallback (and still one to one). */
function own(name: string): string {
  return name.startsWith('-') ? `-${name}` : name;
}

/** A caller's own counter, for a caller without the name. */
function fallback(p: Principal): string {
  return `-${p.via}:${p.subject}`;
}

export function tenantName(p: Principal): string {
  return p.tenant !== undefined ? own(p.tenant) : fallback(p);
}

export function keyName(p: Principal): string {
  return p.keyId !== undefined ? own(p.keyId) : fallback(p);
}
