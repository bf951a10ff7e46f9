// Keys that come off the wire (a method, a capability's name, an input request's key) are looked up and
// written as a program's own names would be, so `constructor`, `toString` or `__proto__` must not find, or
// reach, what every object inherits: a method `constructor` looked up in a plain table found
// `Object.prototype.constructor` and crashed the front door (fuzz seed 977520417), and an upstream's
// capability named `__proto__` merged into `Object.prototype` itself.

/** A lookup table for keys a peer chose: only its own entries are ever found (no prototype), and it is frozen. */
export function wireTable<T>(entries: Record<string, T>): Readonly<Record<string, T>> {
  return Object.freeze(Object.assign(Object.create(null) as Record<string, T>, entries));
}

/** `target[key]` when `target` has it as its own member; never what it inherits. */
export function ownValue(target: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(target, key) ? target[key] : undefined;
}

/**
 * Sets `target[key]` as an own, enumerable member, also for `__proto__`, which assignment would take as
 * the object's prototype instead (so the member would vanish from its JSON, and a merge would descend into
 * the shared prototype).
 */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
