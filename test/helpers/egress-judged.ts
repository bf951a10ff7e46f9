// What the integration tests of the egress stage on prompts, resources and completions share: a stand-in
// resolver (names an attacker controls resolve inside, as their DNS would) and one that stalls a lookup, a
// v2 SDK upstream that records every request it receives, v1 and v2 SDK clients behind one shape, and the
// JSON-RPC refusal they throw.

import assert from 'node:assert/strict';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as V2Client, StreamableHTTPClientTransport as V2Transport } from '@modelcontextprotocol/client';
import { createMcpHandler, type McpServer } from '@modelcontextprotocol/server';
import { listenLoopback, writeFetchResponse } from '../fixtures/upstreams/node-adapter.js';

/** Names and the addresses they resolve to: one inside, two public. */
export const EGRESS_DNS: Readonly<Record<string, string[]>> = { 'inside.attacker.test': ['10.0.0.9'], 'docs.partner.example': ['93.184.216.34'], 'www.elsewhere.example': ['93.184.216.35'] };

/** A resolver over EGRESS_DNS (an unknown name does not resolve), and every name it was asked for. */
export function stubResolver(): { resolveHost: (host: string) => Promise<string[]>; resolved: string[] } {
  const resolved: string[] = [];
  const resolveHost = async (host: string) => {
    resolved.push(host);
    const found = EGRESS_DNS[host];
    if (!found) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found;
  };
  return { resolveHost, resolved };
}

/** A resolver over EGRESS_DNS that holds every lookup of `host` until `release()`: a call kept in the egress stage. */
export interface StallingResolver {
  resolveHost: (host: string) => Promise<string[]>;
  /** Whether a lookup of `host` has reached the resolver (and waits there, unless released). */
  stalled(): boolean;
  release(): void;
}

/**
 * For the tests of a call still in the old configuration's pipeline while a reload runs: the egress stage
 * resolves a URI's host before the call goes on, so stalling that lookup keeps the call there until the test
 * has reloaded.
 */
export function stallingResolver(host: string): StallingResolver {
  let release = (): void => {};
  const resolving = new Promise<void>((resolve) => (release = resolve));
  let stalled = false;
  const { resolveHost: answer } = stubResolver();
  const resolveHost = async (name: string): Promise<string[]> => {
    if (name === host) {
      stalled = true;
      await resolving;
    }
    return answer(name);
  };
  return { resolveHost, stalled: () => stalled, release: () => release() };
}

/** A JSON-RPC error as the SDK clients throw it, with the egress stage's `data`. */
export interface RpcError {
  code: number;
  message: string;
  data?: { code?: string; argument?: string; value?: string; host?: string; port?: number; rule?: string; addressClass?: string };
}

/** The error `work` fails with; fails the test when it succeeds (`what` names what was answered). */
export async function refusalOf(work: Promise<unknown>, what: string): Promise<RpcError> {
  try {
    await work;
  } catch (err) {
    return err as RpcError;
  }
  assert.fail(`${what} was answered`);
}

export interface RecordingUpstream {
  url: string;
  /** Every JSON-RPC request received (method and params), in order. */
  requests: Array<{ method: string; params?: Record<string, unknown> }>;
  close(): Promise<void>;
}

/** A modern-era v2 SDK server on 127.0.0.1:0, `build` making its McpServer for each request. */
export async function startRecordingUpstream(build: () => McpServer): Promise<RecordingUpstream> {
  const requests: RecordingUpstream['requests'] = [];
  const handler = createMcpHandler(build, { legacy: 'reject' });
  const { server, port } = await listenLoopback(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    if (body.length > 0) {
      const msg = JSON.parse(body.toString('utf8')) as { method?: string; params?: Record<string, unknown> };
      if (typeof msg.method === 'string') requests.push({ method: msg.method, ...(msg.params !== undefined ? { params: msg.params } : {}) });
    }
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
    const request = new Request(`http://127.0.0.1:${port}${req.url ?? '/'}`, { method: req.method, headers, ...(body.length > 0 ? { body: new Uint8Array(body) } : {}) });
    await writeFetchResponse(res, await handler.fetch(request));
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    close: async () => {
      await handler.close().catch(() => {});
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The calls the tests make, alike on a v1 (legacy era) and a v2 (modern era) SDK client. */
export interface EgressClient {
  readResource(uri: string): Promise<{ contents: Array<{ uri: string; text?: unknown }> }>;
  getPrompt(name: string, args: Record<string, string>): Promise<{ messages: unknown[] }>;
  complete(params: { ref: { type: 'ref/prompt'; name: string } | { type: 'ref/resource'; uri: string }; argument: { name: string; value: string }; context?: { arguments?: Record<string, string> } }): Promise<{ completion: { values: string[] } }>;
  subscribeResource(uri: string): Promise<unknown>;
}

/** Connects a v1 or v2 SDK client to the gateway at `url`, hands it to `body`, and closes it. */
export async function withClient(era: 'v1' | 'v2', url: string, body: (client: EgressClient) => Promise<void>): Promise<void> {
  if (era === 'v1') {
    const client = new V1Client({ name: 'egress-v1', version: '1' });
    await client.connect(new V1Transport(new URL(url)));
    try {
      await body({
        readResource: (uri) => client.readResource({ uri }) as ReturnType<EgressClient['readResource']>,
        getPrompt: (name, args) => client.getPrompt({ name, arguments: args }),
        complete: (params) => client.complete(params),
        subscribeResource: (uri) => client.subscribeResource({ uri }),
      });
    } finally {
      await client.close();
    }
    return;
  }
  const client = new V2Client({ name: 'egress-v2', version: '1' });
  await client.connect(new V2Transport(new URL(url)));
  try {
    await body({
      readResource: (uri) => client.readResource({ uri }) as ReturnType<EgressClient['readResource']>,
      getPrompt: (name, args) => client.getPrompt({ name, arguments: args }),
      complete: (params) => client.complete(params),
      subscribeResource: (uri) => client.subscribeResource({ uri }),
    });
  } finally {
    await client.close();
  }
}
