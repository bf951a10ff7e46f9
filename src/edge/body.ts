// Reads a request body into one Buffer, refusing anything over the configured size before it is read
// whole: a Content-Length over the limit is refused at once, a chunked body as soon as it crosses it.

import type { IncomingMessage } from 'node:http';

export type BodyResult = { ok: true; body: Buffer } | { ok: false; reason: 'too_large' | 'aborted' | 'timeout' };

/**
 * `timeoutMs` bounds the whole body: a client trickling bytes (slowloris) is cut off, not waited for.
 * A body Node's parser already holds whole is returned at once, not as a promise (bufferedBody).
 */
export function readBody(req: IncomingMessage, maxBytes: number, timeoutMs: number): BodyResult | Promise<BodyResult> {
  const declared = req.headers['content-length'];
  const length = declared === undefined ? undefined : Number(declared);
  if (length !== undefined && length > maxBytes) return TOO_LARGE;
  if (isBuffered(req, length)) return bufferedBody(req, maxBytes);
  // Asked for from within the 'request' event, a body that came in the headers' packets is not there yet:
  // Node's parser pushes it once the handler returns. One microtask later it is, without waiting on events.
  // (The MCP endpoint waits that microtask itself, with one await instead of two promises: bodyInBuffer.)
  return Promise.resolve(length).then((declaredLength) => (isBuffered(req, declaredLength) ? bufferedBody(req, maxBytes) : arrivingBody(req, maxBytes, timeoutMs)));
}

/** Whether the request's whole body is already in its stream's buffer, where readBody reads it at once. */
export function bodyInBuffer(req: IncomingMessage): boolean {
  const declared = req.headers['content-length'];
  return isBuffered(req, declared === undefined ? undefined : Number(declared));
}

function isBuffered(req: IncomingMessage, length: number | undefined): boolean {
  return req.readableFlowing === null && (req.complete || (length !== undefined && req.readableLength >= length));
}

/** A body still on its way: read as it comes, within the size and the time allowed. */
function arrivingBody(req: IncomingMessage, maxBytes: number, timeoutMs: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const timer = setTimeout(() => {
      req.pause();
      finish({ ok: false, reason: 'timeout' });
    }, timeoutMs);
    const finish = (r: BodyResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onAbort);
      req.off('aborted', onAbort);
      resolve(r);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        // Stop reading; the caller answers 413 and the connection is closed after it.
        req.pause();
        finish({ ok: false, reason: 'too_large' });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => finish({ ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    const onAbort = (): void => finish({ ok: false, reason: 'aborted' });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onAbort);
    req.on('aborted', onAbort);
  });
}

const TOO_LARGE: BodyResult = { ok: false, reason: 'too_large' };

/**
 * The usual case: a small body arrives in the same packets as its headers, so by the time it is asked for,
 * the parser has pushed all of it into the stream's buffer: all its declared Content-Length, or the whole
 * message (`complete`, a chunked one). Reading the buffer directly spares the listeners, the flowing-mode
 * ticks, the timer and the promise that waiting for it costs per request. A consumed request needs no
 * `end` for its connection to serve the next one (Node dumps only bodies nobody read).
 */
function bufferedBody(req: IncomingMessage, maxBytes: number): BodyResult {
  const chunks: Buffer[] = [];
  let size = 0;
  for (let chunk = req.read() as Buffer | null; chunk !== null; chunk = req.read() as Buffer | null) {
    size += chunk.length;
    // Without a Content-Length (chunked), the size is known only now.
    if (size > maxBytes) return TOO_LARGE;
    chunks.push(chunk);
  }
  return { ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) };
}
