// What changes in a message when it crosses eras: modern request `_meta` keys, modern result fields
// (`resultType`, `ttlMs`, `cacheScope`, serverInfo), and the capability sets each era declares.
// (2026-07-28/basic/index.mdx §_meta, §ResultType; server/utilities/caching.mdx §Cacheable Results.)

import { META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION, META_SERVER_INFO } from './methods.js';

type Obj = Record<string, unknown>;

/** Results that MUST carry `ttlMs` and `cacheScope` when complete (caching.mdx §Cacheable Results). */
export const CACHEABLE_METHODS: ReadonlySet<string> = new Set([
  'server/discover',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
]);

const MODERN_REQUEST_META = [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL];

export function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Params for a legacy upstream: the modern per-request `_meta` keys removed, everything else kept. */
export function stripModernRequestMeta(params: Obj | undefined): Obj | undefined {
  if (!params || !isObject(params._meta)) return params;
  const meta: Obj = { ...params._meta };
  for (const k of MODERN_REQUEST_META) delete meta[k];
  const out: Obj = { ...params };
  if (Object.keys(meta).length === 0) delete out._meta;
  else out._meta = meta;
  return out;
}

/** Params for a modern upstream: the session's version, capabilities, identity and log level as `_meta`. */
export function addModernRequestMeta(params: Obj | undefined, meta: { version: string; capabilities: Obj; clientInfo?: unknown; logLevel?: string }): Obj {
  const out: Obj = { ...(params ?? {}) };
  const existing = isObject(out._meta) ? out._meta : {};
  out._meta = {
    ...existing,
    [META_PROTOCOL_VERSION]: meta.version,
    [META_CLIENT_CAPABILITIES]: meta.capabilities,
    ...(meta.clientInfo !== undefined ? { [META_CLIENT_INFO]: meta.clientInfo } : {}),
    ...(meta.logLevel !== undefined ? { [META_LOG_LEVEL]: meta.logLevel } : {}),
  };
  return out;
}

/** A legacy result made modern: `resultType`, serverInfo, and cache hints where the method needs them. */
export function toModernResult(method: string, result: Obj, serverInfo: unknown, cache: { ttlMs: number; cacheScope: 'public' | 'private' }): Obj {
  const out: Obj = { ...result, resultType: 'complete' };
  if (CACHEABLE_METHODS.has(method)) {
    out.ttlMs = cache.ttlMs;
    out.cacheScope = cache.cacheScope;
  }
  const meta = isObject(result._meta) ? { ...result._meta } : {};
  if (serverInfo !== undefined) meta[META_SERVER_INFO] = serverInfo;
  out._meta = meta;
  return out;
}

/**
 * A legacy tools/list result as a modern client may see it, and the names of the tools left out. A tool whose
 * `execution.taskSupport` is "required" MUST be invoked as a task, and its server answers any plain call
 * -32601 (2025-11-25/basic/utilities/tasks.mdx §Tool-Level Negotiation); core tasks are not bridged (they are
 * not the 2026 tasks extension), so Gatehouse could only ever call it in breach of that rule: it is left out.
 * `execution` itself only steers the legacy task machinery and is no 2026-07-28 Tool field: dropped.
 */
export function withoutTaskOnlyTools(result: Obj): { result: Obj; taskOnly: string[] } {
  if (!Array.isArray(result.tools) || !result.tools.some((tool) => isObject(tool) && 'execution' in tool)) return { result, taskOnly: [] };
  const tools: unknown[] = [];
  const taskOnly: string[] = [];
  for (const tool of result.tools as unknown[]) {
    if (!isObject(tool) || !('execution' in tool)) {
      tools.push(tool);
      continue;
    }
    const { execution, ...rest } = tool;
    if (isObject(execution) && execution.taskSupport === 'required') {
      if (typeof tool.name === 'string') taskOnly.push(tool.name);
      continue;
    }
    tools.push(rest);
  }
  return { result: { ...result, tools }, taskOnly };
}

/**
 * A 2025-11-25 initialize result as a client may see it where no tool is called as a task: the server's
 * `tasks.requests.tools` left out, and `tasks` itself once it offers no task-augmented request at all (its
 * `list` and `cancel` would be of tasks that cannot exist). Without `tasks.requests.tools.call` a client MUST
 * NOT augment a tools/call with a task (basic/utilities/tasks.mdx §Tool-Level Negotiation, rule 1).
 * Undefined when the server offered no tasks, so the answer can go on as it came.
 */
export function withoutToolCallTasks(result: Obj): Obj | undefined {
  const capabilities = result.capabilities;
  if (!isObject(capabilities) || !Object.hasOwn(capabilities, 'tasks')) return undefined;
  const { tasks, ...others } = capabilities;
  let kept: Obj | undefined;
  if (isObject(tasks) && isObject(tasks.requests)) {
    const { tools: _tools, ...requests } = tasks.requests;
    if (Object.keys(requests).length > 0) kept = { ...tasks, requests };
  }
  return { ...result, capabilities: kept === undefined ? others : { ...others, tasks: kept } };
}

/**
 * A modern tools/list result as a 2025-11-25 client may read it: a tool whose outputSchema is not rooted at
 * `type: "object"` loses it. In 2026-07-28 an outputSchema "can be any valid JSON Schema 2020-12" (an array of
 * tags, a string), while in 2025-11-25 it is "restricted to type: "object" at the root level" (both revisions'
 * schema.json, Tool.outputSchema), and a client that parses lists by the older schema (the v1 SDK's does)
 * refuses the whole list for one such tool. The tool itself stays listed and callable. Unchanged (the same
 * object) when no tool needs it.
 */
export function withLegacyOutputSchemas(result: Obj): Obj {
  if (!Array.isArray(result.tools)) return result;
  const unfit = (tool: unknown): tool is Obj => isObject(tool) && tool.outputSchema !== undefined && !(isObject(tool.outputSchema) && tool.outputSchema.type === 'object');
  if (!result.tools.some(unfit)) return result;
  const tools = (result.tools as unknown[]).map((tool) => {
    if (!unfit(tool)) return tool;
    const { outputSchema: _outputSchema, ...rest } = tool;
    return rest;
  });
  return { ...result, tools };
}

/**
 * Where a 2025-11-25 client finds a tool's structured output that is no JSON object (DESIGN.md §5: Gatehouse's
 * `_meta` keys use `dev.gatehouse/`).
 */
export const META_STRUCTURED_CONTENT = 'dev.gatehouse/structured_content';

/**
 * A modern tools/call result as a 2025-11-25 client may read it. Its `structuredContent` "can be any JSON
 * value" in 2026-07-28, but is a JSON object in 2025-11-25 (both revisions' schema.json,
 * CallToolResult.structuredContent), and a client that parses by the older schema (the v1 SDK's) refuses the
 * result. A value that is no object (a list, a string, null) goes to `_meta` under META_STRUCTURED_CONTENT,
 * kept for a client that wants it and for the output check (policy/output-stage.ts); the content blocks stay,
 * and where there are none, the value as JSON text is one (tools.mdx §Structured Content: the serialized JSON
 * in a TextContent block, for backwards compatibility). Unchanged (the same object) otherwise.
 */
export function withLegacyStructuredContent(result: Obj): Obj {
  if (!Object.hasOwn(result, 'structuredContent') || isObject(result.structuredContent)) return result;
  const { structuredContent, ...rest } = result;
  const out: Obj = { ...rest, _meta: { ...(isObject(rest._meta) ? rest._meta : {}), [META_STRUCTURED_CONTENT]: structuredContent } };
  if (!Array.isArray(out.content) || out.content.length === 0) out.content = [{ type: 'text', text: JSON.stringify(structuredContent) ?? 'null' }];
  return out;
}

/**
 * The structured output of a tools/call result, where it is: `structuredContent`, or for a 2025-11-25 client
 * (`legacy`) of a tool whose outputSchema is not rooted at an object, the value withLegacyStructuredContent
 * moved to `_meta`. Only there: a legacy server cannot put a value past a check of an object schema that way.
 */
export function structuredOutputOf(result: Obj, legacy: boolean, outputSchema: unknown): unknown {
  if (Object.hasOwn(result, 'structuredContent') || !legacy || (isObject(outputSchema) && outputSchema.type === 'object')) return result.structuredContent;
  return isObject(result._meta) && Object.hasOwn(result._meta, META_STRUCTURED_CONTENT) ? result._meta[META_STRUCTURED_CONTENT] : undefined;
}

/** A modern result made legacy: the fields legacy clients do not know are dropped. */
export function toLegacyResult(result: Obj): Obj {
  const out: Obj = { ...result };
  delete out.resultType;
  delete out.ttlMs;
  delete out.cacheScope;
  if (isObject(out._meta)) {
    const meta: Obj = { ...out._meta };
    delete meta[META_SERVER_INFO];
    if (Object.keys(meta).length === 0) delete out._meta;
    else out._meta = meta;
  }
  return out;
}

/**
 * The client capabilities the modern-client bridge carries: the server requests it turns into an
 * InputRequiredResult for its client (2026-07-28 mrtr.mdx; bridge-modern-client.ts INPUT_REQUEST_CAPABILITY).
 */
const BRIDGED_CLIENT_CAPABILITIES = ['sampling', 'elicitation', 'roots'] as const;

/**
 * Modern client capabilities declared to a legacy server at `initialize`: only those the bridge carries. A
 * capability tells the server what it may ask of its client (2025-11-25 basic/lifecycle.mdx §Capability
 * Negotiation), so none is declared that the bridge would then fail: not `tasks` (task-augmented requests
 * and tasks/*, which the bridge refuses: core-tasks.ts), not `experimental` (requests it refuses as unknown),
 * not `roots.listChanged` (a notification a modern client never sends), not `extensions` (no legacy form),
 * nor any key of a client's own.
 */
export function legacyCapabilitiesFrom(modern: Obj): Obj {
  const out: Obj = {};
  for (const name of BRIDGED_CLIENT_CAPABILITIES) {
    const declared = Object.hasOwn(modern, name) ? modern[name] : undefined;
    if (isObject(declared)) out[name] = declared;
  }
  if (isObject(out.roots)) {
    const { listChanged: _listChanged, ...roots } = out.roots;
    out.roots = roots;
  }
  return out;
}

/** Legacy session capabilities sent per request to a modern server (2026-07-28 has no roots.listChanged, no tasks). */
export function modernCapabilitiesFrom(legacy: Obj): Obj {
  const out: Obj = { ...legacy };
  delete out.tasks;
  if (isObject(out.roots)) {
    const roots = { ...out.roots };
    delete roots.listChanged;
    out.roots = roots;
  }
  return out;
}

/** Server capabilities a legacy client may see from a modern upstream's discover result. */
export function legacyServerCapabilitiesFrom(modern: Obj): Obj {
  const out: Obj = { ...modern };
  delete out.extensions;
  return out;
}

/**
 * A modern upstream's discover result as Gatehouse advertises it: without `capabilities.extensions`, whose
 * methods the front door does not route (2026-07-28/basic/versioning.mdx §Extension Negotiation: a client
 * must not use an extension the server did not offer; offering one whose calls would answer 404 misleads it).
 */
export function withoutExtensions(discover: Obj): Obj {
  if (!isObject(discover.capabilities) || discover.capabilities.extensions === undefined) return discover;
  const capabilities = { ...discover.capabilities };
  delete capabilities.extensions;
  return { ...discover, capabilities };
}
