// SSE text in fake upstreams and in the assertions on what a client got: one JSON-RPC message an event.

/** One `message` event holding `message`, as a fake upstream writes it. */
export function sseMessage(message: unknown): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

/** The JSON-RPC messages of an SSE answer read whole, one a `data:` line (as the gateway writes them). */
export function messagesInSse(text: string): Array<Record<string, any>> {
  return text
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => JSON.parse(l.slice(5)) as Record<string, any>);
}
