// How deep a parsed JSON value nests, found without recursion. A peer's value may nest thousands of levels
// (JSON sets no depth, and only a client's messages are held to `listen.maxJsonDepth` before parsing); the
// recursive walks that handle definitions (canonical JSON, digests, schema compilation, writing it again)
// would overflow the stack on it. This decides first whether such a walk is safe.

/** Whether `value` nests deeper than `maxDepth` objects and arrays (a scalar is depth 0, `{}` is 1). */
export function nestedDeeperThan(value: unknown, maxDepth: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  // Each entry: a container and the depth it is at. Values are pushed, not iterated in place, so the walk
  // holds at most the breadth of what it has seen, and stops at the first path too deep.
  const stack: Array<[object, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [container, depth] = stack.pop()!;
    if (depth > maxDepth) return true;
    const children = Array.isArray(container) ? container : Object.values(container);
    for (const child of children) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}
