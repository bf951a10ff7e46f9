// Incremental Server-Sent Events framing (WHATWG HTML §9.2): splits a byte stream into complete events,
// keeping each event's raw text so a relay can forward exactly what it received, event by event.

import { StringDecoder } from 'node:string_decoder';

export interface SseEvent {
  /** The event's text as received, terminator included. */
  raw: string;
  event?: string;
  /** The joined `data:` lines; undefined for comment-only or id-only events. */
  data?: string;
  id?: string;
  retry?: number;
}

const TERMINATOR = /\r\n\r\n|\n\n|\r\r/;

export class SseParser {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';

  /** Feeds a chunk; returns the events it completed (possibly none). */
  push(chunk: Buffer | string): SseEvent[] {
    this.pending += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const events: SseEvent[] = [];
    for (;;) {
      const m = TERMINATOR.exec(this.pending);
      // A comment line that starts an event (a keep-alive such as `:` or `: ping`) is passed on as soon as
      // it is whole, not when a blank line next comes: a keep-alive held back keeps nothing alive. Ended by
      // `\n` (or `\r\n`) only: after a lone `\r`, a `\n` may still be on its way.
      const newline = this.pending.charCodeAt(0) === 0x3a /* : */ ? this.pending.indexOf('\n') : -1;
      if (newline >= 0 && (m === null || m.index > newline)) {
        events.push({ raw: this.pending.slice(0, newline + 1) });
        this.pending = this.pending.slice(newline + 1);
        continue;
      }
      if (!m) break;
      const end = m.index + m[0].length;
      events.push(parseEvent(this.pending.slice(0, end), this.pending.slice(0, m.index)));
      this.pending = this.pending.slice(end);
    }
    return events;
  }

  /** Bytes received after the last complete event (an event cut short by the stream's end). */
  get remainder(): string {
    return this.pending;
  }
}

function parseEvent(raw: string, body: string): SseEvent {
  const ev: SseEvent = { raw };
  let data: string[] | undefined;
  for (const line of body.split(/\r\n|\n|\r/)) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        (data ??= []).push(value);
        break;
      case 'event':
        ev.event = value;
        break;
      case 'id':
        if (!value.includes('\0')) ev.id = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) ev.retry = Number(value);
        break;
      default:
        break; // unknown fields are ignored, as the standard says
    }
  }
  if (data) ev.data = data.join('\n');
  return ev;
}

/** Formats one JSON-RPC message as an SSE `message` event on a single data line. */
export function formatSseMessage(message: unknown, id?: string): string {
  return formatSseJson(JSON.stringify(message), id);
}

/** formatSseMessage for a message already written as JSON text. */
export function formatSseJson(json: string, id?: string): string {
  return `${id !== undefined ? `id: ${id}\n` : ''}event: message\ndata: ${json}\n\n`;
}
