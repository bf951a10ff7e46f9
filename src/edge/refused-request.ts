// A request the edge refuses before its call exists (front door, auth, a batch message the door refuses),
// with the trace it belongs to: its refusal and its end event carry it, so its span and its `request` line
// name a trace as a call's do (pipeline/events.ts RefusedRequest).

import type { IncomingHttpHeaders } from 'node:http';
import type { RefusedRequest } from '../pipeline/events.js';
import { readTraceContext } from '../protocol/trace-context.js';
import type { CallRecord } from './edge-core.js';

/**
 * The refused request of `record`, kept on it for its end event, with the client's trace context from its
 * headers. Read here, on refusals only; an admitted call reads it from its headers and `_meta` (server.ts
 * traceOf). The body is not looked at: most refusals come before it is read, or because it cannot be.
 */
export function refusedRequest(record: CallRecord, headers: IncomingHttpHeaders): RefusedRequest {
  const trace = readTraceContext(headers.traceparent, headers.tracestate);
  const request: RefusedRequest = trace !== undefined ? { receivedAt: record.started, trace } : { receivedAt: record.started };
  record.refused = request;
  return request;
}
