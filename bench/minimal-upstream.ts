// A minimal hand-written MCP upstream for the benchmark: it answers in a few microseconds so that the
// cost of whatever sits in front of it (Gatehouse, the bare hop) is what the numbers show.
//
// Both eras on one endpoint:
//   legacy (2025-11-25): `initialize` mints a session id, notifications get 202, `tools/call` needs a
//                        known `mcp-session-id`, DELETE ends the session.
//   modern (2026-07-28): stateless; `tools/call` must carry `mcp-method`/`mcp-name` headers matching the
//                        body and `_meta.io.modelcontextprotocol/protocolVersion` matching the header.
//
// Usage: node --import tsx bench/minimal-upstream.ts [--port N] [--tools N] [--sse on]   (prints one "listening" JSON line)
//   --tools N: list N more tools (`tool_0` … `tool_<N-1>`, each answered like `echo`), for the catalog bench.
//   --sse on: answer tools/call as a stream of one `message` event (as the MCP SDKs' servers do by default)
//          instead of a JSON body.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { announceListening, LEGACY_VERSION, listenLoopback, MODERN_VERSION, parseFlags, readBody, stopOnSignals, TOOL_NAME } from './common.js';

const PATH = '/mcp';
const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
/** Bounded so a misbehaving client cannot grow it without limit; the bench opens one session per cell. */
const MAX_SESSIONS = 10_000;
const sessions = new Set<string>();
const flags = parseFlags(process.argv.slice(2), ['port', 'tools', 'sse']);
const SSE_ANSWERS = flags.sse === 'on';
const SCHEMA = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
const EXTRA_TOOLS = new Set(Array.from({ length: Number(flags.tools ?? 0) }, (_, i) => `tool_${i}`));
/** The tools/list payload, built once. */
const TOOLS_JSON = JSON.stringify([TOOL_NAME, ...EXTRA_TOOLS].map((name) => ({ name, description: `The ${name} tool.`, inputSchema: SCHEMA })));

interface RpcMessage {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: { name?: unknown; arguments?: { text?: unknown }; protocolVersion?: unknown; _meta?: Record<string, unknown> };
}

function send(res: ServerResponse, status: number, body: string, headers?: Record<string, string>): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** A tool's answer: a JSON body, or with --sse one event on a stream that then ends. */
function answer(res: ServerResponse, body: string): void {
  if (!SSE_ANSWERS) return send(res, 200, body);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end(`event: message\ndata: ${body}\n\n`);
}

function rpcError(res: ServerResponse, status: number, id: unknown, code: number, message: string): void {
  send(res, status, `{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)},"error":{"code":${code},"message":${JSON.stringify(message)}}}`);
}

function toolResult(id: unknown, text: unknown, modern: boolean): string {
  const t = typeof text === 'string' ? text : '';
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{${modern ? '"resultType":"complete",' : ''}"content":[{"type":"text","text":${JSON.stringify(t)}}]}}`;
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? '/';
  if (url !== PATH) return send(res, 404, '{"error":"not_found"}');
  const sessionHeader = req.headers['mcp-session-id'];
  if (req.method === 'DELETE') {
    if (typeof sessionHeader === 'string' && sessions.delete(sessionHeader)) return send(res, 200, '{}');
    return rpcError(res, 404, null, -32001, 'Session not found');
  }
  if (req.method !== 'POST') {
    res.writeHead(405, { allow: 'POST, DELETE' });
    res.end();
    return;
  }
  const raw = await readBody(req);
  if (raw === null) return rpcError(res, 413, null, -32600, 'Body too large');
  let msg: RpcMessage;
  try {
    msg = JSON.parse(raw.toString('utf8')) as RpcMessage;
  } catch {
    return rpcError(res, 400, null, -32700, 'Parse error');
  }
  if (msg === null || typeof msg !== 'object' || msg.jsonrpc !== '2.0' || typeof msg.method !== 'string') {
    return rpcError(res, 400, null, -32600, 'Invalid Request');
  }
  const isNotification = msg.id === undefined;
  const version = req.headers['mcp-protocol-version'];
  const modern = version === MODERN_VERSION;

  if (isNotification) {
    res.writeHead(202);
    res.end();
    return;
  }

  if (modern) {
    // Header/body validation (2026-07-28 streamable-http §Server Validation), cheap string compares only.
    if (req.headers['mcp-method'] !== msg.method) return rpcError(res, 400, msg.id, -32020, 'Header mismatch: Mcp-Method');
    if (msg.params?._meta?.[PROTOCOL_VERSION_META] !== MODERN_VERSION) return rpcError(res, 400, msg.id, -32020, 'Header mismatch: protocol version');
    if (msg.method === 'tools/call') {
      if (req.headers['mcp-name'] !== msg.params?.name) return rpcError(res, 400, msg.id, -32020, 'Header mismatch: Mcp-Name');
      if (!knownTool(msg.params?.name)) return send(res, 200, `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"resultType":"complete","isError":true,"content":[{"type":"text","text":"unknown tool"}]}}`);
      return answer(res, toolResult(msg.id, msg.params?.arguments?.text, true));
    }
    if (msg.method === 'tools/list') {
      return send(res, 200, `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"resultType":"complete","ttlMs":60000,"tools":${TOOLS_JSON}}}`);
    }
    return rpcError(res, 404, msg.id, -32601, 'Method not found');
  }

  // Legacy era.
  if (msg.method === 'initialize') {
    if (sessions.size >= MAX_SESSIONS) return rpcError(res, 503, msg.id, -32000, 'Too many sessions');
    const id = randomUUID();
    sessions.add(id);
    const requested = msg.params?.protocolVersion;
    const negotiated = typeof requested === 'string' && requested.startsWith('20') && requested <= LEGACY_VERSION ? requested : LEGACY_VERSION;
    return send(
      res,
      200,
      `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"protocolVersion":"${negotiated}","capabilities":{"tools":{}},"serverInfo":{"name":"bench-minimal-upstream","version":"0.0.0"}}}`,
      { 'mcp-session-id': id },
    );
  }
  if (typeof sessionHeader !== 'string') return rpcError(res, 400, msg.id, -32000, 'Bad Request: Mcp-Session-Id header is required');
  if (!sessions.has(sessionHeader)) return rpcError(res, 404, msg.id, -32001, 'Session not found');
  if (msg.method === 'tools/call') {
    if (msg.params?.name !== TOOL_NAME) return send(res, 200, `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"isError":true,"content":[{"type":"text","text":"unknown tool"}]}}`);
    return answer(res, toolResult(msg.id, msg.params.arguments?.text, false));
  }
  if (msg.method === 'tools/list') {
    return send(res, 200, `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{"tools":[{"name":"${TOOL_NAME}","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}}`);
  }
  if (msg.method === 'ping') return send(res, 200, `{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":{}}`);
  return rpcError(res, 200, msg.id, -32601, 'Method not found');
}

function knownTool(name: unknown): boolean {
  return name === TOOL_NAME || (typeof name === 'string' && EXTRA_TOOLS.has(name));
}
const server = createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
  handle(req, res).catch(() => {
    if (!res.headersSent) send(res, 500, '{"error":"internal"}');
    else res.destroy();
  });
});
stopOnSignals(server);
await listenLoopback(server, Number(flags.port ?? 0));
announceListening(server, PATH, 'minimal-upstream');
