// The three client kinds of the era-matrix test behind one small interface, so a table of
// clients × upstreams × operations can drive them all with the same code:
//   v1-legacy-client — `@modelcontextprotocol/sdk` (v1) Client + StreamableHTTPClientTransport: a 2025-era
//                      client (`initialize`, `Mcp-Session-Id`, server→client requests on SSE).
//   v2-pinned-client — `@modelcontextprotocol/client` 2.4.0 with `versionNegotiation: { mode: { pin:
//                      '2026-07-28' } }`: probes with `server/discover`, modern or nothing (no fallback).
//   v2-auto-client   — the same v2 client with `mode: 'auto'`: probes with `server/discover`, stays modern on
//                      modern evidence, otherwise falls back to a plain 2025 `initialize` on the same
//                      transport.
//   v1-sse-client    — the v1 Client + SSEClientTransport: the HTTP+SSE transport of 2024-11-05 (a GET stream
//                      and POSTs to the endpoint it names); not in CLIENT_KINDS, its URL is a gateway's ssePath.
// Every client declares the elicitation capability (server-everything registers its elicitation tool only
// for such clients, and a modern server may only ask for input types the request declared).

import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

export type ClientKind = 'v1-legacy-client' | 'v2-pinned-client' | 'v2-auto-client';
export const CLIENT_KINDS: readonly ClientKind[] = ['v1-legacy-client', 'v2-pinned-client', 'v2-auto-client'];
/** Every client kind, the SSE one included. */
export type AnyClientKind = ClientKind | 'v1-sse-client';

export const MODERN_VERSION = '2026-07-28';

/** The parts of an `elicitation/create` request the tests look at. */
export interface SeenElicitation {
  message: string;
  requestedSchema: unknown;
}

/** What the client's elicitation handler answers: an ElicitResult (open like every MCP result). */
export interface ElicitAnswer {
  [key: string]: unknown;
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, string | number | boolean | string[]>;
}

export interface ProgressEvent {
  progress: number;
  total?: number;
}

export interface ToolResult {
  content: Array<{ type: string; text?: string }>;
  isError?: boolean;
}

/** One HTTP exchange as the client saw it (for diagnostics and for the era-detection report). */
export interface WireRecord {
  method: string;
  /** `MCP-Protocol-Version` the client sent, if any. */
  protocolVersion: string | null;
  /** `Mcp-Method` the client sent, if any. */
  mcpMethod: string | null;
  sessionId: string | null;
  /** JSON-RPC method(s) in the body, or `response` for a posted JSON-RPC response. */
  rpc: string;
  status: number;
}

export interface MatrixClient {
  kind: AnyClientKind;
  /** 'modern' | 'legacy' as the client decided (v1 is always legacy). */
  era(): string | undefined;
  listToolNames(): Promise<string[]>;
  /** The texts of a prompt's messages. */
  getPromptTexts(name: string): Promise<string[]>;
  /** The texts of a resource's contents. */
  readResourceTexts(uri: string): Promise<string[]>;
  callTool(name: string, args: Record<string, unknown>, opts?: { onprogress?: (p: ProgressEvent) => void }): Promise<ToolResult>;
  /** Every elicitation/create the client's handler was asked, in order. */
  elicitations: SeenElicitation[];
  wire: WireRecord[];
  close(): Promise<void>;
}

export interface ConnectOptions {
  /** The answer the elicitation handler gives (default: cancel). */
  elicitAnswer?: ElicitAnswer;
  /** Bound for connect and for each request, in ms. */
  timeoutMs?: number;
  /** How long the user takes to answer an elicitation (v2 clients), in ms. */
  elicitDelayMs?: number;
  /** Where to record the HTTP exchanges; pass your own to keep them when connect fails. */
  wire?: WireRecord[];
}

function rpcSummary(body: unknown): string {
  if (typeof body !== 'string' || body === '') return '';
  try {
    const parsed = JSON.parse(body) as unknown;
    const msgs = Array.isArray(parsed) ? parsed : [parsed];
    return msgs
      .map((m) => {
        const o = m as { method?: unknown; result?: unknown; error?: unknown };
        return typeof o.method === 'string' ? o.method : 'result' in o || 'error' in o ? 'response' : '?';
      })
      .join(',');
  } catch {
    return '?';
  }
}

/** A fetch that records each exchange's request headers, JSON-RPC method and response status. */
function recordingFetch(wire: WireRecord[]): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const headers = new Headers(init?.headers);
    const res = await fetch(url, init);
    wire.push({
      method: init?.method ?? 'GET',
      protocolVersion: headers.get('mcp-protocol-version'),
      mcpMethod: headers.get('mcp-method'),
      sessionId: headers.get('mcp-session-id'),
      rpc: rpcSummary(init?.body),
      status: res.status,
    });
    return res;
  };
}

function asToolResult(result: unknown): ToolResult {
  const r = result as { content?: unknown; isError?: unknown };
  return {
    content: Array.isArray(r.content) ? (r.content as ToolResult['content']) : [],
    ...(r.isError === true ? { isError: true } : {}),
  };
}

/** What a MatrixClient asks of its SDK client; each SDK generation has its own call shapes and options for these. */
interface SdkCalls {
  listTools(): Promise<{ tools: Array<{ name: string }> }>;
  getPrompt(name: string): Promise<{ messages: Array<{ content: { type: string; text?: unknown } }> }>;
  readResource(uri: string): Promise<{ contents: Array<Record<string, unknown>> }>;
  callTool(name: string, args: Record<string, unknown>, onprogress?: (p: ProgressEvent) => void): Promise<unknown>;
  close(): Promise<void>;
}

/** Runs `connect`; when it fails, closes the client (whose own error on closing is of no interest) and rejects with the connect error. */
async function connectOrClose(connect: () => Promise<void>, close: () => Promise<void>): Promise<void> {
  try {
    await connect();
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}

/** The SDK's progress callback for `onprogress`, in the shape the tests see. */
function relayProgress(onprogress: ((p: ProgressEvent) => void) | undefined): { onprogress?: (p: { progress: number; total?: number }) => void } {
  return onprogress ? { onprogress: (p) => onprogress({ progress: p.progress, total: p.total }) } : {};
}

function matrixClient(kind: AnyClientKind, era: () => string | undefined, sdk: SdkCalls, elicitations: SeenElicitation[], wire: WireRecord[]): MatrixClient {
  return {
    kind,
    era,
    async listToolNames() {
      return (await sdk.listTools()).tools.map((t) => t.name);
    },
    async getPromptTexts(name) {
      return promptTexts(await sdk.getPrompt(name));
    },
    async readResourceTexts(uri) {
      return resourceTexts(await sdk.readResource(uri));
    },
    async callTool(name, args, callOpts = {}) {
      return asToolResult(await sdk.callTool(name, args, callOpts.onprogress));
    },
    elicitations,
    wire,
    async close() {
      await sdk.close().catch(() => {});
    },
  };
}

async function connectV1(url: string, opts: Required<ConnectOptions>, sse = false): Promise<MatrixClient> {
  const wire = opts.wire;
  const elicitations: SeenElicitation[] = [];
  const transport = sse ? new SSEClientTransport(new URL(url), { fetch: recordingFetch(wire) }) : new V1Transport(new URL(url), { fetch: recordingFetch(wire) });
  const client = new V1Client({ name: 'gatehouse-era-matrix-v1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicitations.push({ message: req.params.message, requestedSchema: 'requestedSchema' in req.params ? req.params.requestedSchema : undefined });
    return opts.elicitAnswer;
  });
  await connectOrClose(() => client.connect(transport, { timeout: opts.timeoutMs }), () => client.close());
  const timeout = opts.timeoutMs;
  const sdk: SdkCalls = {
    listTools: () => client.listTools(undefined, { timeout }),
    getPrompt: (name) => client.getPrompt({ name }, { timeout }),
    readResource: (uri) => client.readResource({ uri }, { timeout }),
    callTool: (name, args, onprogress) => client.callTool({ name, arguments: args }, undefined, { timeout, ...relayProgress(onprogress) }),
    close: () => client.close(),
  };
  return matrixClient(sse ? 'v1-sse-client' : 'v1-legacy-client', () => 'legacy', sdk, elicitations, wire);
}

async function connectV2(kind: 'v2-pinned-client' | 'v2-auto-client', url: string, opts: Required<ConnectOptions>): Promise<MatrixClient> {
  const wire = opts.wire;
  const elicitations: SeenElicitation[] = [];
  const transport = new V2Transport(new URL(url), { fetch: recordingFetch(wire) });
  const client = new V2Client(
    { name: `gatehouse-era-matrix-${kind}`, version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: kind === 'v2-pinned-client' ? { pin: MODERN_VERSION } : 'auto' },
    },
  );
  // On a modern connection the client fulfils `input_required` results through this same handler
  // (ClientOptions.inputRequired.autoFulfill defaults to true); on a legacy one it answers server requests.
  client.setRequestHandler('elicitation/create', async (req) => {
    const params = req.params as { message: string; requestedSchema?: unknown };
    elicitations.push({ message: params.message, requestedSchema: params.requestedSchema });
    if (opts.elicitDelayMs > 0) await new Promise((r) => setTimeout(r, opts.elicitDelayMs));
    return opts.elicitAnswer;
  });
  await connectOrClose(() => client.connect(transport, { timeout: opts.timeoutMs }), () => client.close());
  const timeout = opts.timeoutMs;
  const sdk: SdkCalls = {
    listTools: () => client.listTools(undefined, { timeout, cacheMode: 'bypass' }),
    getPrompt: (name) => client.getPrompt({ name }, { timeout }),
    readResource: (uri) => client.readResource({ uri }, { timeout }),
    callTool: (name, args, onprogress) => client.callTool({ name, arguments: args }, { timeout, ...relayProgress(onprogress) }),
    close: () => client.close(),
  };
  return matrixClient(kind, () => client.getProtocolEra(), sdk, elicitations, wire);
}

/** Connects a client of the given kind to `url`; rejects with the client's own error when it cannot. */
export function connectClient(kind: AnyClientKind, url: string, options: ConnectOptions = {}): Promise<MatrixClient> {
  const opts: Required<ConnectOptions> = {
    elicitAnswer: options.elicitAnswer ?? { action: 'cancel' },
    timeoutMs: options.timeoutMs ?? 10_000,
    wire: options.wire ?? [],
    elicitDelayMs: options.elicitDelayMs ?? 0,
  };
  if (kind === 'v1-sse-client') return connectV1(url, opts, true);
  return kind === 'v1-legacy-client' ? connectV1(url, opts) : connectV2(kind, url, opts);
}

/** All text content of a tool result, joined by newlines. */
export function textOf(result: ToolResult): string {
  return result.content
    .filter((c) => c.type === 'text')
    .map((c) => c.text ?? '')
    .join('\n');
}

/** The exchanges on one line each, e.g. `POST server/discover v=2026-07-28 → 400`. */
export function describeWire(wire: readonly WireRecord[]): string {
  return wire.map((w) => `${w.method} ${w.rpc || '-'} v=${w.protocolVersion ?? '-'} → ${w.status}`).join('; ');
}

/** A one-line description of what a client threw. */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  return `${err.constructor.name}${code !== undefined ? `(${String(code)})` : ''}: ${err.message.replace(/\s+/g, ' ')}`;
}

/** The text of each message of a prompts/get result (both SDKs give the same shape). */
function promptTexts(result: { messages: Array<{ content: { type: string; text?: unknown } }> }): string[] {
  return result.messages.map((m) => (m.content.type === 'text' && typeof m.content.text === 'string' ? m.content.text : ''));
}

/** The text of each content of a resources/read result. */
function resourceTexts(result: { contents: Array<Record<string, unknown>> }): string[] {
  return result.contents.map((c) => ('text' in c && typeof c.text === 'string' ? c.text : ''));
}
