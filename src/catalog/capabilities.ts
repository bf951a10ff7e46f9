// The union of several servers' capabilities (issue: server/discover and initialize advertise the union).
// A feature flag is on when any member has it on; nested objects merge the same way.

type Obj = Record<string, unknown>;

export function mergeCapabilities(all: readonly Obj[]): Obj {
  const out: Obj = {};
  for (const caps of all) mergeInto(out, caps);
  return out;
}

function mergeInto(target: Obj, source: Obj): void {
  for (const [key, value] of Object.entries(source)) {
    const current = target[key];
    if (isObj(value)) {
      const merged: Obj = isObj(current) ? current : {};
      mergeInto(merged, value);
      target[key] = merged;
    } else if (value === true || current === undefined) {
      target[key] = value;
    }
  }
}

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
