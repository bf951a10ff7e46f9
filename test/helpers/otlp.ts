// A minimal OTLP/HTTP trace receiver for the tracing tests: decodes the JSON ExportTraceServiceRequest of
// every POST /v1/traces (what @opentelemetry/exporter-trace-otlp-http sends by default) and keeps its spans.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpValue { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean }
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** 1 INTERNAL, 2 SERVER, 3 CLIENT. */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Array<{ key: string; value: OtlpValue }>;
  events?: Array<{ name: string; attributes: Array<{ key: string; value: OtlpValue }> }>;
  status?: { code?: number; message?: string };
}
export interface Receiver {
  url: string;
  requests: number;
  spans: OtlpSpan[];
  resources: Array<Array<{ key: string; value: OtlpValue }>>;
  close(): Promise<void>;
}

export const SPAN_KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3 } as const;

export async function startReceiver(): Promise<Receiver> {
  const receiver: Omit<Receiver, 'url' | 'close'> = { requests: 0, spans: [], resources: [] };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      receiver.requests++;
      assert.match(String(req.headers['content-type']), /application\/json/);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: OtlpValue }> }; scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
      for (const rs of body.resourceSpans) {
        receiver.resources.push(rs.resource.attributes);
        for (const ss of rs.scopeSpans) receiver.spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}/v1/traces`,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  }) as Receiver;
}

export function attr(span: OtlpSpan | { attributes: Array<{ key: string; value: OtlpValue }> }, key: string): string | number | boolean | undefined {
  const v = span.attributes.find((a) => a.key === key)?.value;
  if (!v) return undefined;
  return v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue;
}

export async function waitFor<T>(what: string, probe: () => T | undefined, ms = 8000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `bytes` random bytes as lowercase hex: a trace id (16) or a span id (8). */
export const hex = (bytes: number): string => [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
