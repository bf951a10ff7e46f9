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
 * errors.ts's ProtocolRefusal, restated (protocol/ imports nothing outside itself): an answer of Gatehouse's
 * own, so the idempotency stage knows the call never went up.
 */
export interface CoreTaskRefusal {
  kind: 'protocol';
  code: 'task_unsupported';
  rpcCode: number;
  message: string;
}

/**
 * Why a task method, or a task-augmented request (`params.task`), is refused, else undefined. -32601, as a
 * server answers a task it does not support (tasks.mdx §Tool-Level Negotiation) and a method it lacks.
 */
export function coreTaskRefusal(request: JsonRpcRequest): CoreTaskRefusal | undefined {
  if (TASK_METHODS.has(request.method)) {
    return { kind: 'protocol', code: 'task_unsupported', rpcCode: ErrorCode.MethodNotFound, message: `Method not found: ${request.method} (this server declares no tasks capability)` };
  }
  if (request.params !== undefined && Object.hasOwn(request.params, 'task')) {
    return { kind: 'protocol', code: 'task_unsupported', rpcCode: ErrorCode.MethodNotFound, message: `Task-augmented ${request.method} is not supported: this server declares no tasks capability; send the request without params.task` };
  }
  return undefined;
}

/** The same refusal as the JSON-RPC response that answers `request`. */
export function coreTaskResponse(request: JsonRpcRequest): JsonRpcResponse | undefined {
  const refusal = coreTaskRefusal(request);
  return refusal === undefined ? undefined : errorResponse(request.id, refusal.rpcCode, refusal.message);
}
