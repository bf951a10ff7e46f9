// 2025-11-25 core tasks (basic/utilities/tasks.mdx) where Gatehouse holds the client's session itself (the
// era bridges, and through them stdio `shared`/`single` children and the catalog). They are not bridged
// (GATEWAY-REQUIREMENTS §16.1/§16.2: no modern counterpart) and no `tasks` capability is advertised there,
// and none could be carried safely: the server sees Gatehouse as its one client, so it cannot bind a task to
// the caller that made it (tasks.mdx §Task Isolation and Access Control: a `single` child's task store is
// every caller's), and a task's result would reach its caller through `tasks/result`, which no stage
// governs (no audit record, no output check). Such requests are refused before they go up.

import { ErrorCode, errorResponse, type JsonRpcRequest, type JsonRpcResponse } from './jsonrpc.js';

/** The client-to-server task methods of 2025-11-25 (schema.json `ClientRequest`). */
const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel']);

/**
 * The refusal for a task method, or for a task-augmented request (`params.task`), else undefined. -32601, as
 * a server answers a task it does not support (tasks.mdx §Tool-Level Negotiation) and a method it lacks.
 */
export function coreTaskRefusal(request: JsonRpcRequest): JsonRpcResponse | undefined {
  if (TASK_METHODS.has(request.method)) {
    return errorResponse(request.id, ErrorCode.MethodNotFound, `Method not found: ${request.method} (this server declares no tasks capability)`);
  }
  if (request.params !== undefined && Object.hasOwn(request.params, 'task')) {
    return errorResponse(request.id, ErrorCode.MethodNotFound, `Task-augmented ${request.method} is not supported: this server declares no tasks capability; send the request without params.task`);
  }
  return undefined;
}
