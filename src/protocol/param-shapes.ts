// The types of the client-controlled fields Gatehouse itself reads (names, URIs, cursors, ids, `_meta`
// keys), checked once at the front door so nothing past it ever meets an object where it expects a string.
// The shapes are those of the client messages in shared/spec/schema/{2025-11-25,2026-07-28}/schema.json;
// fields Gatehouse only forwards are left for the upstream to judge.

import { LOG_LEVELS } from './log-levels.js';
import { wireTable } from './own-keys.js';
import type { JsonRpcMessage, MessageKind } from './jsonrpc.js';
import { META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION } from './methods.js';

type Shape = 'string' | 'object' | 'id' | 'number' | 'boolean' | 'strings' | 'logLevel';

interface Field {
  shape: Shape;
  required?: boolean;
}

const STRING: Field = { shape: 'string' };
const REQUIRED_STRING: Field = { shape: 'string', required: true };
const OBJECT: Field = { shape: 'object' };
const REQUIRED_OBJECT: Field = { shape: 'object', required: true };
const ID: Field = { shape: 'id' };
const BOOLEAN: Field = { shape: 'boolean' };
const STRINGS: Field = { shape: 'strings' };
/**
 * A LoggingLevel of the schema (RFC 5424 severities). A level nobody understands is refused here rather
 * than kept: Gatehouse hands a legacy client's level to a modern upstream in every request's _meta, where a
 * server would refuse each one (logging.mdx §Error Handling: invalid log level, -32602).
 */
const LOG_LEVEL: Field = { shape: 'logLevel' };
const REQUIRED_LOG_LEVEL: Field = { shape: 'logLevel', required: true };
const LOG_LEVEL_NAMES = new Set<string>(LOG_LEVELS);

/** MRTR retries (2026-07-28 mrtr.mdx) carry these on the calls that may ask for input. */
const RETRY_FIELDS = { requestState: STRING, inputResponses: OBJECT };
const PAGINATED = { cursor: STRING };

/** Per method, the params fields whose type Gatehouse relies on. */
const PARAMS: Readonly<Record<string, Readonly<Record<string, Field>>>> = wireTable<Readonly<Record<string, Field>>>({
  initialize: { protocolVersion: STRING, capabilities: OBJECT, clientInfo: OBJECT },
  'tools/call': { name: REQUIRED_STRING, arguments: OBJECT, ...RETRY_FIELDS },
  'prompts/get': { name: REQUIRED_STRING, arguments: OBJECT, ...RETRY_FIELDS },
  'resources/read': { uri: REQUIRED_STRING, ...RETRY_FIELDS },
  'resources/subscribe': { uri: REQUIRED_STRING },
  'resources/unsubscribe': { uri: REQUIRED_STRING },
  'completion/complete': { ref: REQUIRED_OBJECT, argument: REQUIRED_OBJECT, context: OBJECT },
  'logging/setLevel': { level: REQUIRED_LOG_LEVEL },
  'tools/list': PAGINATED,
  'prompts/list': PAGINATED,
  'resources/list': PAGINATED,
  'resources/templates/list': PAGINATED,
  'subscriptions/listen': { notifications: OBJECT },
  'notifications/cancelled': { requestId: ID, reason: STRING },
  'notifications/progress': { progressToken: { shape: 'id', required: true }, progress: { shape: 'number', required: true } },
});

/**
 * subscriptions/listen's `notifications` (2026-07-28 schema.json `SubscriptionFilter`): Gatehouse reads
 * every field of it, to split the URIs among upstreams and to judge each notification it relays.
 */
const LISTEN_FILTER: Readonly<Record<string, Field>> = {
  toolsListChanged: BOOLEAN,
  promptsListChanged: BOOLEAN,
  resourcesListChanged: BOOLEAN,
  resourceSubscriptions: STRINGS,
};

/** `_meta` keys Gatehouse reads (2026-07-28/basic/index.mdx §_meta, and progressToken in both eras). */
const META: Readonly<Record<string, Field>> = {
  [META_PROTOCOL_VERSION]: STRING,
  [META_CLIENT_CAPABILITIES]: OBJECT,
  [META_CLIENT_INFO]: OBJECT,
  [META_LOG_LEVEL]: LOG_LEVEL,
  progressToken: ID,
};

/**
 * What is wrong with the types of a message's fields, as one sentence for a -32602 answer, or undefined
 * when Gatehouse can safely read everything it needs.
 */
export function paramShapeProblem(kind: MessageKind, message: JsonRpcMessage): string | undefined {
  if (kind === 'response') return responseProblem(message as { result?: unknown; error?: unknown; id?: unknown });
  const { method, params } = message as { method: string; params?: Record<string, unknown> };
  if (params === undefined) return requiredMissing(PARAMS[method], 'params');
  const meta = params._meta;
  if (meta !== undefined) {
    if (!isObject(meta)) return 'params._meta must be an object';
    const problem = fieldsProblem(META, meta, 'params._meta');
    if (problem) return problem;
  }
  const fields = PARAMS[method];
  if (fields === undefined) return undefined;
  const problem = fieldsProblem(fields, params, 'params');
  if (problem) return problem;
  if (method === 'completion/complete') return completionRefProblem(params.ref as Record<string, unknown>);
  if (method === 'subscriptions/listen' && params.notifications !== undefined) return fieldsProblem(LISTEN_FILTER, params.notifications as Record<string, unknown>, 'params.notifications');
  return undefined;
}

function fieldsProblem(fields: Readonly<Record<string, Field>>, where: Record<string, unknown>, path: string): string | undefined {
  for (const name in fields) {
    const field = fields[name]!;
    const value = where[name];
    if (value === undefined) {
      if (field.required) return `${path}.${name} is required`;
      continue;
    }
    if (!hasShape(value, field.shape)) return `${path}.${name} must be ${SHAPE_WORDS[field.shape]}`;
  }
  return undefined;
}

function requiredMissing(fields: Readonly<Record<string, Field>> | undefined, path: string): string | undefined {
  if (fields === undefined) return undefined;
  for (const name in fields) if (fields[name]!.required) return `${path}.${name} is required`;
  return undefined;
}

/** completion/complete: a PromptReference names a prompt, a ResourceTemplateReference a URI. */
function completionRefProblem(ref: Record<string, unknown>): string | undefined {
  if (typeof ref.type !== 'string') return 'params.ref.type must be a string';
  if (ref.type === 'ref/prompt' && typeof ref.name !== 'string') return 'params.ref.name must be a string';
  if (ref.type === 'ref/resource' && typeof ref.uri !== 'string') return 'params.ref.uri must be a string';
  return undefined;
}

/** A client's answer to a server request: a result object, or an error with a numeric code and a message. */
function responseProblem(m: { result?: unknown; error?: unknown; id?: unknown }): string | undefined {
  if (m.id !== null && !hasShape(m.id, 'id')) return '"id" must be a string or an integer';
  if (m.result !== undefined && !isObject(m.result)) return '"result" must be an object';
  if (m.error !== undefined) {
    if (!isObject(m.error)) return '"error" must be an object';
    if (typeof m.error.code !== 'number' || !Number.isInteger(m.error.code)) return '"error.code" must be an integer';
    if (typeof m.error.message !== 'string') return '"error.message" must be a string';
  }
  return undefined;
}

const SHAPE_WORDS: Record<Shape, string> = { string: 'a string', object: 'an object', id: 'a string or an integer', number: 'a number', boolean: 'true or false', strings: 'an array of strings', logLevel: `one of ${LOG_LEVELS.join(', ')}` };

function hasShape(value: unknown, shape: Shape): boolean {
  switch (shape) {
    case 'string':
      return typeof value === 'string';
    case 'object':
      return isObject(value);
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    case 'strings':
      return Array.isArray(value) && value.every((item) => typeof item === 'string');
    case 'id':
      return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
    case 'logLevel':
      return typeof value === 'string' && LOG_LEVEL_NAMES.has(value);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
