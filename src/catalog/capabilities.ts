// The union of several servers' capabilities (issue: server/discover and initialize advertise the union).
// A feature flag is on when any member has it on; nested objects merge the same way.

import { ownValue, setOwn } from '../protocol/own-keys.js';

type Obj = Record<string, unknown>;

export function mergeCapabilities(all: readonly Obj[]): Obj {
  const out: Obj = {};
  for (const caps of all) mergeInto(out, caps);
  return out;
}

function mergeInto(target: Obj, source: Obj): void {
  for (const [key, value] of Object.entries(source)) {
    // Own members only: a capability an upstream names `__proto__` is a member like any other, never a way
    // into the prototype every object shares.
    const current = ownValue(target, key);
    if (isObj(value)) {
      const merged: Obj = isObj(current) ? current : {};
      mergeInto(merged, value);
      setOwn(target, key, merged);
    } else if (value === true || current === undefined) {
      setOwn(target, key, value);
    }
  }
}

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
