// The one answer to a resources/read of a resource the caller cannot have, whether it does not exist or an
// access rule hides it: the two must read the same (server/resources.mdx §Error Handling; README "Access
// rules"), or a caller learns what the rules hide by asking. The access stage refuses a hidden URI with it,
// the catalog answers a URI no member owns with it, and an upstream's own not-found answer (to a read, or
// to a completion about a URI no member listed) is put in these words (catalog.ts) wherever access rules
// govern resources.

import { describeValue } from './describe.js';
import { ErrorCode, errorResponse, type JsonRpcId, type JsonRpcMessage, type JsonRpcResponse } from './jsonrpc.js';

/** Resource not found until 2025-11-25 (2025-11-25/server/resources.mdx §Error Handling); -32602 since. */
const LEGACY_RESOURCE_NOT_FOUND = -32002;

/** The words of the answer: 2026-07-28's code, -32602, for every era (clients SHOULD accept it, and -32002). */
export function resourceNotFoundMessage(uri: unknown): string {
  return `Resource not found: ${describeValue(uri)}`;
}

export function resourceNotFound(id: JsonRpcId | null, uri: unknown): JsonRpcResponse {
  return errorResponse(id, ErrorCode.InvalidParams, resourceNotFoundMessage(uri));
}

/**
 * An upstream's answer to one resources/read, or to a completion/complete about a URI no member listed,
 * with its not-found error in Gatehouse's words: -32002 (the code until 2025-11-25) or -32602 (2026-07-28's;
 * resources/read has no other parameter than its URI to be invalid, and a completion's -32602 about a URI
 * nobody listed cannot be told from a not-found), whatever message and data the server gave. Everything
 * else passes as it came.
 */
export async function* notFoundInOurWords(messages: AsyncGenerator<JsonRpcMessage, void, void>, id: JsonRpcId, uri: unknown): AsyncGenerator<JsonRpcMessage, void, void> {
  for await (const m of messages) {
    const code = 'error' in m && m.id === id ? m.error?.code : undefined;
    yield code === LEGACY_RESOURCE_NOT_FOUND || code === ErrorCode.InvalidParams ? resourceNotFound(id, uri) : m;
  }
}
