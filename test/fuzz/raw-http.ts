// One HTTP/1.1 exchange over a raw node:net socket, so the fuzzer controls every byte on the wire:
// repeated headers, odd framing and bytes that fetch or undici would refuse to send.

import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  /** Lower-cased names; a repeated header keeps every value in order. */
  headers: Record<string, string[]>;
  body: Buffer;
  /** The body was cut by the fuzzer's deadline (a stream left open), not ended by the server. */
  truncated: boolean;
}

export type RawOutcome =
  | { kind: 'response'; response: RawResponse; ms: number }
  /** The connection ended before a status line arrived. */
  | { kind: 'closed'; ms: number; error?: string; bytes: number }
  /** No status line within the deadline. */
  | { kind: 'timeout'; ms: number; bytes: number };

export interface RawRequestOptions {
  port: number;
  /** The request exactly as it goes on the wire. */
  bytes: Buffer;
  /** Until the status line and headers are in. */
  headersDeadlineMs: number;
  /** How long an event stream is read before the socket is closed by us. */
  streamReadMs: number;
  /** For any other body: how long after the headers it may take. */
  bodyDeadlineMs: number;
  /** A response to HEAD has no body whatever its headers say. */
  head?: boolean;
}

/** Sends `bytes`, reads one response (1xx interim answers skipped), and always destroys the socket. */
export function rawRequest(opts: RawRequestOptions): Promise<RawOutcome> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: opts.port });
    let buf = Buffer.alloc(0);
    let head: { status: number; headers: Record<string, string[]>; bodyStart: number } | undefined;
    let done = false;
    let timer: NodeJS.Timeout;
    const finish = (o: RawOutcome): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(o);
    };
    const respond = (body: Buffer, truncated: boolean): void => finish({ kind: 'response', response: { status: head!.status, headers: head!.headers, body, truncated }, ms: elapsed() });
    timer = setTimeout(() => finish({ kind: 'timeout', ms: elapsed(), bytes: buf.length }), opts.headersDeadlineMs);
    // Whatever the body framing, try to complete the response from the bytes we have.
    const tryComplete = (ended: boolean): void => {
      if (!head) {
        for (;;) {
          const end = buf.indexOf('\r\n\r\n');
          if (end === -1) {
            if (ended) finish({ kind: 'closed', ms: elapsed(), bytes: buf.length });
            return;
          }
          const parsed = parseHead(buf.subarray(0, end).toString('latin1'));
          if (parsed === undefined) return finish({ kind: 'closed', ms: elapsed(), error: 'unparsable status line', bytes: buf.length });
          if (parsed.status >= 100 && parsed.status < 200) {
            buf = buf.subarray(end + 4);
            continue;
          }
          head = { ...parsed, bodyStart: end + 4 };
          clearTimeout(timer);
          const stream = (parsed.headers['content-type']?.[0] ?? '').toLowerCase().startsWith('text/event-stream');
          timer = setTimeout(() => respond(bodySoFar(), true), stream ? opts.streamReadMs : opts.bodyDeadlineMs);
          break;
        }
      }
      const body = buf.subarray(head.bodyStart);
      if (opts.head || head.status === 204 || head.status === 304) return respond(Buffer.alloc(0), false);
      const te = head.headers['transfer-encoding']?.join(',').toLowerCase() ?? '';
      if (te.includes('chunked')) {
        const decoded = decodeChunked(body);
        if (decoded.complete) return respond(decoded.body, false);
        if (ended) return respond(decoded.body, true);
        return;
      }
      const cl = head.headers['content-length']?.[0];
      if (cl !== undefined && /^\d+$/.test(cl.trim())) {
        const n = Number(cl.trim());
        if (body.length >= n) return respond(body.subarray(0, n), false);
        if (ended) return respond(body, true);
        return;
      }
      if (ended) respond(body, false);
    };
    const bodySoFar = (): Buffer => {
      const body = buf.subarray(head!.bodyStart);
      const te = head!.headers['transfer-encoding']?.join(',').toLowerCase() ?? '';
      return te.includes('chunked') ? decodeChunked(body).body : body;
    };
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      tryComplete(false);
    });
    socket.on('end', () => tryComplete(true));
    socket.on('close', () => tryComplete(true));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (head) return respond(bodySoFar(), true);
      finish({ kind: 'closed', ms: elapsed(), error: err.code ?? err.message, bytes: buf.length });
    });
    socket.write(opts.bytes);
  });
}

function parseHead(text: string): { status: number; headers: Record<string, string[]> } | undefined {
  const lines = text.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '');
  if (!m) return undefined;
  const headers: Record<string, string[]> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    (headers[name] ??= []).push(line.slice(colon + 1).trim());
  }
  return { status: Number(m[1]), headers };
}

function decodeChunked(data: Buffer): { body: Buffer; complete: boolean } {
  const parts: Buffer[] = [];
  let i = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', i);
    if (eol === -1) return { body: Buffer.concat(parts), complete: false };
    const size = parseInt(data.subarray(i, eol).toString('latin1').split(';')[0]!.trim(), 16);
    if (Number.isNaN(size)) return { body: Buffer.concat(parts), complete: true };
    if (size === 0) return { body: Buffer.concat(parts), complete: true };
    if (data.length < eol + 2 + size) {
      parts.push(data.subarray(eol + 2));
      return { body: Buffer.concat(parts), complete: false };
    }
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    i = eol + 2 + size + 2;
  }
}

/** Sends `bytes` and hangs up after `afterMs` without reading: a client that gives up mid-request. */
export function rawAbort(port: number, bytes: Buffer, afterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    socket.write(bytes);
    setTimeout(() => {
      socket.destroy();
      resolve();
    }, afterMs);
  });
}
