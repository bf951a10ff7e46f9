// Small helpers that write complete JSON answers. Every refusal body is a JSON-RPC error object.

import type { ServerResponse } from 'node:http';
import { errorResponse, type JsonRpcId } from '../protocol/jsonrpc.js';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendJsonRpcError(
  res: ServerResponse,
  status: number,
  id: JsonRpcId | null,
  code: number,
  message: string,
  data?: unknown,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, errorResponse(id, code, message, data), headers);
}
