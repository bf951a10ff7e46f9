// Which tools clients will see under another name than their upstream gives them, and why. The names come
// from the catalog's own assignPublicNames, over every upstream's tools at once (a collision can span
// upstreams); this file only explains the difference.

import { assignPublicNames, baseName, MAX_NAME_LENGTH, refString, type PrefixMode, type Ref } from '../catalog/public-names.js';

export interface RenamedTool {
  upstream: string;
  name: string;
  publicName: string;
  reasons: string[];
}

export interface NamePlan {
  /** Whether every name gets its upstream's name in front (tools.naming.prefix). */
  prefixed: boolean;
  /** Public name by ref (`upstream/name`). */
  names: Map<string, string>;
  /** Tools whose public name is not their own name (prefix aside). */
  renamed: RenamedTool[];
}

const UNSAFE = /[^A-Za-z0-9_-]/g;

/** `upstreams`: the configured upstreams' names, in the config's order (which of two safe names keeps it). */
export function planNames(refs: readonly Ref[], mode: PrefixMode, upstreams: readonly string[]): NamePlan {
  const names = assignPublicNames(refs, mode, upstreams);
  // The same rule as assignPublicNames: a prefix for `always`, and for `auto` once there are several upstreams.
  const prefixed = mode === 'always' || (mode === 'auto' && upstreams.length > 1);
  const byBase = new Map<string, Ref[]>();
  for (const ref of refs) {
    const base = baseName(ref, prefixed);
    byBase.set(base, [...(byBase.get(base) ?? []), ref]);
  }
  const renamed: RenamedTool[] = [];
  for (const ref of refs) {
    const publicName = names.get(refString(ref))!;
    const expected = prefixed ? `${ref.upstream}_${ref.name}` : ref.name;
    if (publicName === expected) continue;
    const reasons: string[] = [];
    const unsafe = [...new Set(ref.name.match(UNSAFE) ?? [])];
    if (ref.name === '') reasons.push('the name is empty');
    if (unsafe.length > 0) reasons.push(`unsafe characters ${unsafe.map((c) => JSON.stringify(c)).join(' ')} (only letters, digits, "_" and "-" are safe)`);
    const base = baseName(ref, prefixed);
    if (base.length > MAX_NAME_LENGTH) reasons.push(`longer than ${MAX_NAME_LENGTH} characters (${base.length})`);
    const others = (byBase.get(base) ?? []).filter((r) => r !== ref);
    if (others.length > 0 && publicName !== base) reasons.push(`collides with ${others.map((r) => refString(r)).join(', ')} as "${base}"`);
    if (reasons.length === 0) reasons.push("its shortened name matched another tool's name");
    renamed.push({ upstream: ref.upstream, name: ref.name, publicName, reasons });
  }
  return { prefixed, names, renamed };
}
