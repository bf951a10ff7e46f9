// A legacy session's GET stream (2025-11-25/basic/transports.mdx §Listening for Messages): SSE with
// keep-alive comments, or a 406 when the client does not accept SSE.

import { ErrorCode } from '../protocol/jsonrpc.js';
import type { McpExchange } from '../upstream/upstream.js';
import { sendJsonRpcError } from './respond.js';
import { SseWriter } from './sse-writer.js';

const KEEPALIVE_MS = 15_000;

/** Opens the stream; `onClose` runs once when the client goes away. Undefined when refused (406 sent). */
export function openListenStream(ex: McpExchange, sessionId: string, onClose: (writer: SseWriter) => void): SseWriter | undefined {
  if (!(ex.req.headers.accept ?? '').includes('text/event-stream')) {
    sendJsonRpcError(ex.res, 406, null, ErrorCode.InvalidRequest, 'GET on the MCP endpoint needs Accept: text/event-stream', undefined, { 'x-gatehouse-call-id': ex.callId });
    return undefined;
  }
  const writer = new SseWriter(ex.res, { 'x-gatehouse-call-id': ex.callId, 'mcp-session-id': sessionId });
  writer.open();
  const keepalive = setInterval(() => writer.comment(), KEEPALIVE_MS).unref();
  ex.res.on('close', () => {
    clearInterval(keepalive);
    onClose(writer);
  });
  return writer;
}
