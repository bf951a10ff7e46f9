// The public HTTP listener: health endpoints, and the MCP endpoint's cheap guards (method, body size, one
// parse of the body) before an exchange is handed to the upstream. It knows nothing of what the upstream
// is; the gateway passes a handler in.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { ListenConfig } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import { classifyBody, ErrorCode } from '../protocol/jsonrpc.js';
import { isModernVersion, type ClientEra } from '../protocol/versions.js';
import type { McpExchange } from '../upstream/upstream.js';
import { readBody } from './body.js';
import { compileHostOriginGuard } from './origin-guard.js';
import { sendJson, sendJsonRpcError } from './respond.js';

export interface EdgeHandlers {
  /** Answers one MCP exchange completely. */
  mcp(ex: McpExchange): Promise<void>;
  /** Readiness of everything behind the edge, by upstream name. */
  readiness(): Promise<Record<string, boolean>>;
}

export interface Edge {
  readonly server: Server;
  /** Requests that are being answered right now (listen streams excluded: they carry no work). */
  readonly inFlight: number;
  /** Stops accepting work: new requests on kept-alive connections get 503 and `Connection: close`. */
  startDraining(): void;
  /** Resolves when no request is in flight, or after `ms`, whichever is first; true when drained. */
  drained(ms: number): Promise<boolean>;
}

export function createEdge(listen: ListenConfig, handlers: EdgeHandlers, log: Logger, opts: { loopback: boolean }): Edge {
  const guard = compileHostOriginGuard(listen, opts.loopback);
  let inFlight = 0;
  let draining = false;
  const idleWaiters: Array<() => void> = [];
  const listenStreams = new Set<ServerResponse>();

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const path = pathOf(req.url);
    if (draining) {
      res.setHeader('connection', 'close');
      sendJsonRpcError(res, 503, null, ErrorCode.InternalError, 'Gatehouse is shutting down', { code: 'GW_ERR_SHUTTING_DOWN', retryable: true }, { 'retry-after': '1' });
      return;
    }
    if (path === listen.path) {
      const isListen = req.method === 'GET';
      if (isListen) {
        listenStreams.add(res);
        res.on('close', () => listenStreams.delete(res));
      } else {
        inFlight++;
        res.on('close', () => {
          if (--inFlight === 0) for (const w of idleWaiters.splice(0)) w();
        });
      }
      handleMcp(req, res).catch((err: unknown) => {
        log.error('unhandled error on the MCP endpoint', { err });
        if (!res.headersSent) sendJsonRpcError(res, 500, null, ErrorCode.InternalError, 'Internal gateway error');
        else res.destroy();
      });
      return;
    }
    if (path === '/healthz' && req.method === 'GET') return sendJson(res, 200, { status: 'ok' });
    if (path === '/readyz' && req.method === 'GET') {
      void handlers.readiness().then(
        (upstreams) => {
          const ready = Object.values(upstreams).every(Boolean);
          sendJson(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready', upstreams });
        },
        () => sendJson(res, 503, { status: 'not_ready' }),
      );
      return;
    }
    sendJson(res, 404, { error: 'not_found', message: `Nothing here; the MCP endpoint is ${listen.path}` });
  };

  async function handleMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const callId = randomUUID();
    const verdict = guard(req.headers);
    if (!verdict.ok) {
      log.warn('request refused by the Host/Origin guard', { callId, reason: verdict.message });
      sendJsonRpcError(res, 403, null, ErrorCode.InvalidRequest, `Forbidden: ${verdict.message}`, undefined, { 'x-gatehouse-call-id': callId });
      return;
    }
    const method = req.method;
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') {
      sendJsonRpcError(res, 405, null, ErrorCode.InvalidRequest, `Method ${method} is not allowed on the MCP endpoint`, undefined, { allow: 'GET, POST, DELETE', 'x-gatehouse-call-id': callId });
      return;
    }
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    const versionHeader = req.headers['mcp-protocol-version'];
    const era: ClientEra = isModernVersion(typeof versionHeader === 'string' ? versionHeader : undefined) ? 'modern' : 'legacy';
    if (method !== 'POST') {
      await handlers.mcp({ callId, req, res, httpMethod: method, era, signal: controller.signal });
      return;
    }
    const read = await readBody(req, listen.maxBodyBytes);
    if (!read.ok) {
      if (read.reason === 'too_large') {
        res.setHeader('connection', 'close');
        sendJsonRpcError(res, 413, null, ErrorCode.InvalidRequest, `Request body exceeds ${listen.maxBodyBytes} bytes`, undefined, { 'x-gatehouse-call-id': callId });
      }
      return;
    }
    const parsed = classifyBody(read.body);
    if (!parsed.ok) {
      sendJsonRpcError(res, 400, null, parsed.code, parsed.message, undefined, { 'x-gatehouse-call-id': callId });
      return;
    }
    await handlers.mcp({ callId, req, res, httpMethod: 'POST', body: read.body, message: parsed.message, kind: parsed.kind, era, signal: controller.signal });
  }

  const server = createServer({ keepAliveTimeout: 65_000 }, onRequest);
  server.on('clientError', (err, socket) => {
    log.debug('malformed HTTP from a client', { err });
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
  });

  return {
    server,
    get inFlight() {
      return inFlight;
    },
    startDraining() {
      draining = true;
      // Listening streams carry no work in progress: end them now so clients reconnect elsewhere.
      for (const res of listenStreams) res.end();
      server.closeIdleConnections();
    },
    drained(ms) {
      if (inFlight === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), ms);
        idleWaiters.push(() => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
  };
}

function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
