// Reading a streaming HTTP answer in tests: the JSON-RPC messages of its SSE events, as they come.

import { SseParser } from '../../src/protocol/sse.js';

/**
 * SSE messages from `body` until `done` says so, the body ends, or `ms` pass. Each call starts a new
 * parser, so call it between whole events (as the streams under test send them).
 */
export async function readSseUntil(body: AsyncIterable<unknown>, done: (messages: Array<Record<string, any>>) => boolean, ms = 5_000): Promise<Array<Record<string, any>>> {
  const parser = new SseParser();
  const messages: Array<Record<string, any>> = [];
  const it = body[Symbol.asyncIterator]();
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !done(messages)) {
    const next = await Promise.race([it.next(), new Promise<{ done: true; value: undefined }>((r) => setTimeout(() => r({ done: true, value: undefined }), Math.max(1, deadline - Date.now())))]);
    if (next.done) break;
    for (const ev of parser.push(next.value as Buffer)) if (ev.data) messages.push(JSON.parse(ev.data) as Record<string, any>);
  }
  return messages;
}

/** How long `body` took to end, reading it (bounded by `ms`); undefined when it was still open then. */
export async function msUntilBodyEnds(body: AsyncIterable<unknown>, ms: number): Promise<number | undefined> {
  const started = Date.now();
  const it = body[Symbol.asyncIterator]();
  for (;;) {
    const left = started + ms - Date.now();
    if (left <= 0) return undefined;
    const next = await Promise.race([it.next().catch(() => ({ done: true as const, value: undefined })), new Promise<'open'>((r) => setTimeout(() => r('open'), left))]);
    if (next === 'open') return undefined;
    if (next.done) return Date.now() - started;
  }
}
