// The upstream the fuzzed gateway forwards to: a small MCP server of one era (legacy 2025-11-25 or modern
// 2026-07-28) on node:http, which remembers every fuzz marker and watched secret it was sent, and can be
// told by a `fault` tool call to misbehave, so the gateway's upstream-failure answers get fuzzed too.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Per-case markers the fuzzer embeds in request bodies: plain alphanumerics, so re-encoding keeps them. */
export const MARKER_PATTERN = /FZM[0-9a-z]+MZF/g;

export type UpstreamEra = 'legacy' | 'modern';

/** What `tools/call` of the `fault` tool can ask for, by `arguments.kind`. */
export const FAULT_KINDS = ['reset', 'garbage', 'http500', 'http404', 'http401', 'empty200', 'html', 'sse_cut', 'sse_ok', 'wrong_id', 'slow', 'big', 'elicit', 'deep'] as const;

export interface UpstreamOptions {
  era: UpstreamEra;
  /** Adds a tool whose name is not safe as a public name, which sends a lone upstream through the catalog. */
  unsafeName?: boolean;
  /**
   * Lists a tool whose inputSchema nests 20,000 levels, and announces a capability nested as deep (JSON
   * text: JSON.stringify would overflow). Once, one such tool failed every catalog list and one such
   * capability every initialize; the catalog now leaves them out. For a catalog's member only: a lone
   * upstream listing one is served through the catalog, which would take the pass-through out of the fuzz.
   */
  deepDefinitions?: boolean;
  /** Strings that must never reach an upstream (the clients' API keys). */
  secrets: string[];
  /**
   * The credential Gatehouse is configured to send this upstream (`upstreams[].headers`): a request
   * without it is recorded in `uncredentialed`.
   */
  credential?: { header: string; value: string };
  /** How long a `slow` fault waits: longer than the gateway's upstream header timeout. */
  slowMs: number;
  /** Longest an open stream (GET, subscriptions/listen, a parked elicitation) is held. */
  holdMs: number;
  /**
   * Every this many POSTs (Gatehouse's own probes and list reads included) get a fault instead of an
   * answer, so the gateway meets a broken upstream where no client asked for one; 0 turns it off.
   */
  chaosEvery: number;
}

/** Faults chaos picks from, in turn. */
const CHAOS: readonly string[] = ['garbage', 'http500', 'reset', 'empty200', 'wrong_id', 'sse_cut', 'html', 'http404', 'slow'];

export interface Received {
  method: string;
  url: string;
  headers: string[];
  body: string;
}

/** A `tools/call` as it reached this upstream: what the governed properties are held against. */
export interface ReceivedCall {
  /** Date.now() when its body was in. */
  at: number;
  name: unknown;
  arguments: unknown;
  /** `params._meta.idempotencyKey`, as sent. */
  idempotencyKey: unknown;
  /** The fuzz markers it carried: which case sent it. */
  markers: string[];
  /**
   * The HTTP status it was answered with, once answered whole (a reset or a cut stream leaves it unset):
   * a 4xx says the call did not run (an unknown session, no credential), so a gateway may send it again.
   */
  status?: number;
}

export interface RecordingUpstream {
  url: string;
  era: UpstreamEra;
  /** Every marker seen in a body or header, with the HTTP status this upstream answered it with. */
  markers: Map<string, number>;
  /** Markers of requests this upstream answered with a JSON-RPC error of its own. */
  erred: Set<string>;
  /** Markers of requests this upstream answered with a fault (chaos or the `fault` tool): a wrong id, garbage, a reset… */
  faulted: Set<string>;
  /** Requests that carried a watched secret (should stay empty). */
  secretLeaks: Received[];
  /** Requests without the upstream's own configured credential (should stay empty). */
  uncredentialed: Received[];
  /** The credential it expects, as given. */
  credential?: { header: string; value: string };
  requests: number;
  /** Every `tools/call` request that reached it (a fault answered or not: it may have acted). */
  toolCalls: ReceivedCall[];
  /** The last requests, for diagnostics. */
  recent: Received[];
  close(): Promise<void>;
}

const RECENT = 40;

const LEGACY_TOOLS = [
  { name: 'echo', description: 'Echoes text', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  {
    name: 'add',
    description: 'Adds',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    outputSchema: { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] },
  },
  { name: 'fault', description: 'Makes the upstream misbehave', inputSchema: { type: 'object', properties: { kind: { type: 'string' } } } },
];
const QUERY_TOOL = {
  name: 'query',
  description: 'Mirrored arguments',
  inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, n: { type: 'integer', 'x-mcp-header': 'N' }, sql: { type: 'string' } } },
};
const UNSAFE_TOOL = { name: 'read.file', description: 'An unsafe public name', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } };

export async function startRecordingUpstream(opts: UpstreamOptions): Promise<RecordingUpstream> {
  const markers = new Map<string, number>();
  const erred = new Set<string>();
  /** Answers written with a JSON-RPC error body. */
  const errorAnswers = new WeakSet<ServerResponse>();
  const faulted = new Set<string>();
  /** Answers that were a fault. */
  const faultAnswers = new WeakSet<ServerResponse>();
  const secretLeaks: Received[] = [];
  const uncredentialed: Received[] = [];
  const recent: Received[] = [];
  const open = new Set<ServerResponse>();
  /** Legacy elicitations waiting for the client's answer, by the id this upstream gave the request. */
  const parked = new Map<string, { res: ServerResponse; id: unknown }>();
  let counter = 0;
  let posts = 0;
  const tools = [...LEGACY_TOOLS, ...(opts.era === 'modern' ? [QUERY_TOOL] : []), ...(opts.unsafeName ? [UNSAFE_TOOL] : [])];
  const up: RecordingUpstream = {
    url: '',
    era: opts.era,
    markers,
    erred,
    faulted,
    secretLeaks,
    uncredentialed,
    ...(opts.credential !== undefined ? { credential: opts.credential } : {}),
    requests: 0,
    toolCalls: [],
    recent,
    close: async () => {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = raw.toString('latin1');
      const rec: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.rawHeaders, body: body.length > 2000 ? `${body.slice(0, 2000)}…` : body };
      up.requests++;
      recent.push(rec);
      if (recent.length > RECENT) recent.shift();
      const seen = new Set<string>();
      for (const text of [body, ...req.rawHeaders]) for (const m of text.matchAll(MARKER_PATTERN)) seen.add(m[0]);
      if (opts.secrets.some((s) => body.includes(s) || req.rawHeaders.some((h) => h.includes(s)))) secretLeaks.push(rec);
      if (opts.credential !== undefined && req.headers[opts.credential.header] !== opts.credential.value) uncredentialed.push(rec);
      // The status is known only once answered; until then a marker counts as answered 200.
      for (const m of seen) markers.set(m, 200);
      res.once('finish', () => {
        for (const m of seen) {
          markers.set(m, res.statusCode);
          if (errorAnswers.has(res)) erred.add(m);
        }
      });
      // A reset never finishes: the close says it too.
      res.once('close', () => {
        if (faultAnswers.has(res)) for (const m of seen) faulted.add(m);
      });
      try {
        answer(req, res, raw.toString('utf8'));
      } catch {
        res.destroy();
      }
    });
  });

  const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void => {
    const text = JSON.stringify(value);
    if ((value as { error?: unknown }).error !== undefined) errorAnswers.add(res);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
    res.end(text);
  };
  /** Holds an event stream open, bounded by holdMs so nothing outlives a run. */
  const hold = (res: ServerResponse, first: string[]): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of first) res.write(event);
    open.add(res);
    const t = setTimeout(() => res.end(), opts.holdMs);
    res.on('close', () => {
      clearTimeout(t);
      open.delete(res);
    });
  };
  const sse = (value: unknown): string => `event: message\ndata: ${JSON.stringify(value)}\n\n`;
  const modern = opts.era === 'modern';
  const complete = (result: Record<string, unknown>): Record<string, unknown> => (modern ? { resultType: 'complete', ...result } : result);
  const listMeta = modern ? { ttlMs: 5_000, cacheScope: 'public' } : {};

  function answer(req: IncomingMessage, res: ServerResponse, body: string): void {
    if (req.method === 'GET') {
      if (modern) return void res.writeHead(405, { allow: 'POST' }).end();
      return hold(res, [': listening\n\n']);
    }
    if (req.method === 'DELETE') return void res.writeHead(modern ? 405 : 200).end();
    if (req.method !== 'POST') return void res.writeHead(405).end();
    let msg: { id?: unknown; method?: unknown; params?: Record<string, unknown>; result?: unknown; error?: unknown };
    try {
      msg = JSON.parse(body) as typeof msg;
    } catch {
      return json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    }
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid request' } });
    const { id, method } = msg;
    const params = msg.params !== null && typeof msg.params === 'object' ? msg.params : {};
    if (typeof method !== 'string') {
      // A client's answer to a request of ours: it may complete a parked elicitation.
      const waiting = typeof id === 'string' ? parked.get(id) : undefined;
      if (waiting) {
        parked.delete(id as string);
        waiting.res.end(sse({ jsonrpc: '2.0', id: waiting.id, result: { content: [{ type: 'text', text: 'elicited' }] } }));
      }
      return void res.writeHead(202).end();
    }
    if (id === undefined) return void res.writeHead(202).end();
    if (method === 'tools/call') {
      const meta = params._meta !== null && typeof params._meta === 'object' ? (params._meta as Record<string, unknown>) : {};
      const call: ReceivedCall = { at: Date.now(), name: params.name, arguments: params.arguments, idempotencyKey: meta.idempotencyKey, markers: [...body.matchAll(MARKER_PATTERN)].map((m) => m[0]) };
      up.toolCalls.push(call);
      res.once('finish', () => (call.status = res.statusCode));
    }
    if (opts.chaosEvery > 0 && ++posts % opts.chaosEvery === 0) return fault(res, id, CHAOS[(posts / opts.chaosEvery) % CHAOS.length]!);
    const ok = (result: Record<string, unknown>, headers: Record<string, string> = {}): void => {
      // Every fifth answer comes as an event stream, so the gateway's SSE relay is fuzzed too.
      if (++counter % 5 === 0 && String(req.headers.accept ?? '').includes('text/event-stream')) {
        res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
        res.end(sse({ jsonrpc: '2.0', id, result: complete(result) }));
        return;
      }
      json(res, 200, { jsonrpc: '2.0', id, result: complete(result) }, headers);
    };
    const fail = (code: number, message: string): void => json(res, 200, { jsonrpc: '2.0', id, error: { code, message } });
    switch (method) {
      case 'server/discover':
        if (!modern) {
          // How the SDK's legacy servers answer a message before initialize.
          return json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: Server not initialized' } });
        }
        if (opts.deepDefinitions) return withDeep(res, { jsonrpc: '2.0', id, result: complete({ supportedVersions: ['2026-07-28'], capabilities: CAPABILITIES, ttlMs: 5_000, cacheScope: 'public', _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'fuzz-modern', version: '1' } } }) }, '"capabilities":{', `"capabilities":{"experimental":{"deep":${DEEP}},`);
        return ok({ supportedVersions: ['2026-07-28'], capabilities: CAPABILITIES, ttlMs: 5_000, cacheScope: 'public', _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'fuzz-modern', version: '1' } } });
      case 'initialize': {
        if (modern) {
          return json(res, 400, { jsonrpc: '2.0', id, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: text(params.protocolVersion) } } });
        }
        const v = params.protocolVersion;
        const version = typeof v === 'string' && ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'].includes(v) ? v : '2025-11-25';
        return json(res, 200, { jsonrpc: '2.0', id, result: { protocolVersion: version, capabilities: CAPABILITIES, serverInfo: { name: 'fuzz-legacy', version: '1' } } }, { 'mcp-session-id': `lg-${++counter}-${Math.random().toString(36).slice(2, 10)}` });
      }
      case 'ping':
      case 'logging/setLevel':
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return ok({});
      case 'tools/list':
        if (opts.deepDefinitions) return withDeep(res, { jsonrpc: '2.0', id, result: complete({ tools, ...listMeta }) }, '"tools":[', `"tools":[{"name":"deep_schema","inputSchema":${DEEP_SCHEMA}},`);
        return ok({ tools, ...listMeta });
      case 'prompts/list':
        return ok({ prompts: [{ name: 'greet', description: 'Greets', arguments: [{ name: 'who', required: false }] }], ...listMeta });
      case 'resources/list':
        return ok({ resources: [{ uri: `fuzz://${opts.era}/doc`, name: 'doc', mimeType: 'text/plain' }], ...listMeta });
      case 'resources/templates/list':
        return ok({ resourceTemplates: [{ uriTemplate: `fuzz://${opts.era}/{id}`, name: 'docs' }], ...listMeta });
      case 'resources/read':
        return ok({ contents: [{ uri: text(params.uri), mimeType: 'text/plain', text: 'contents' }] });
      case 'prompts/get':
        return ok({ messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }] });
      case 'completion/complete':
        return ok({ completion: { values: ['a', 'b'], total: 2, hasMore: false } });
      case 'subscriptions/listen':
        if (!modern) return fail(-32601, 'Method not found');
        return hold(res, [sse({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': text(id) }, notifications: params.notifications ?? {} } })]);
      case 'tools/call': {
        const name = params.name;
        const args = (params.arguments !== null && typeof params.arguments === 'object' ? params.arguments : {}) as Record<string, unknown>;
        if (!tools.some((t) => t.name === name)) return fail(-32602, `Unknown tool: ${text(name)}`);
        if (name === 'fault') return fault(res, id, text(args.kind));
        if (name === 'add') {
          const sum = Number(args.a) + Number(args.b);
          return ok({ content: [{ type: 'text', text: String(sum) }], structuredContent: { sum } });
        }
        return ok({ content: [{ type: 'text', text: typeof args.text === 'string' ? args.text : 'ok' }] });
      }
      default:
        return fail(-32601, 'Method not found');
    }
  }

  function fault(res: ServerResponse, id: unknown, kind: string): void {
    faultAnswers.add(res);
    const result = { jsonrpc: '2.0', id, result: complete({ content: [{ type: 'text', text: kind }] }) };
    switch (kind) {
      case 'reset':
        return void res.socket?.destroy();
      case 'garbage':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":');
      case 'http500':
        return void res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream exploded');
      case 'http404':
        return json(res, 404, { jsonrpc: '2.0', id, error: { code: -32001, message: 'Session not found' } });
      case 'http401':
        return void res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
      case 'empty200':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end();
      case 'html':
        return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>hi</html>');
      case 'sse_cut':
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(': about to break\n\n');
        return void setTimeout(() => res.socket?.destroy(), 20);
      case 'sse_ok':
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(sse({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }));
        return void res.end(sse(result));
      case 'wrong_id':
        return json(res, 200, { ...result, id: 'not-the-id' });
      case 'slow': {
        const t = setTimeout(() => json(res, 200, result), opts.slowMs);
        return void res.on('close', () => clearTimeout(t));
      }
      case 'big':
        return json(res, 200, { ...result, result: complete({ content: [{ type: 'text', text: 'x'.repeat(2_000_000) }] }) });
      case 'deep':
        // Valid JSON nested 20,000 levels deep (JSON sets no limit), as text: JSON.stringify would overflow.
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(result).replace('"result":{', `"result":{"structuredContent":${DEEP},`));
      case 'elicit': {
        if (modern) {
          return json(res, 200, { jsonrpc: '2.0', id, result: { resultType: 'input_required', inputRequests: { who: { method: 'elicitation/create', params: { message: 'Who?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } } }, requestState: 'fuzz-state' } });
        }
        const ask = `up-el-${++counter}`;
        parked.set(ask, { res, id });
        res.on('close', () => parked.delete(ask));
        return hold(res, [sse({ jsonrpc: '2.0', id: ask, method: 'elicitation/create', params: { message: 'Who?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } })]);
      }
      default:
        return json(res, 200, result);
    }
  }

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  up.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  return up;
}

/** Clients' values as text; hostile ones like `{"toString":"x","valueOf":1}` make `String()` throw. */
function text(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? 'undefined');
}

/**
 * With members named `__proto__` and `constructor`, from JSON text (an object literal would take the first
 * as its prototype): a gateway that merges capabilities must keep them members (once, the catalog's union
 * merged `__proto__` into Object.prototype, and the logger broke).
 */
const CAPABILITIES = JSON.parse('{"tools":{"listChanged":false},"prompts":{},"resources":{"subscribe":true},"logging":{},"completions":{},"__proto__":{"fuzzPolluted":true},"constructor":{"fuzz":true}}') as Record<string, unknown>;
const DEEP = '{"child":'.repeat(20_000) + '{}' + '}'.repeat(20_000);
const DEEP_SCHEMA = '{"type":"object","properties":{"a":'.repeat(20_000) + '{}' + '}}'.repeat(20_000);

/** A JSON answer with text spliced in after `at` (its first occurrence): what JSON.stringify cannot write. */
function withDeep(res: ServerResponse, message: Record<string, unknown>, at: string, replacement: string): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(message).replace(at, replacement));
}
