// Reads a request body into one Buffer, refusing anything over the configured size before it is read
// whole: a Content-Length over the limit is refused at once, a chunked body as soon as it crosses it.

import type { IncomingMessage } from 'node:http';

export type BodyResult = { ok: true; body: Buffer } | { ok: false; reason: 'too_large' | 'aborted' | 'timeout' };

/** `timeoutMs` bounds the whole body: a client trickling bytes (slowloris) is cut off, not waited for. */
export function readBody(req: IncomingMessage, maxBytes: number, timeoutMs: number): Promise<BodyResult> {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > maxBytes) {
    return Promise.resolve({ ok: false, reason: 'too_large' });
  }
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
