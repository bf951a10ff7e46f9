// A legacy server may ping on any stream it answers a request on (2025-11-25/basic/transports.mdx §Sending
// Messages 6), before `initialized` too (basic/lifecycle.mdx §Initialization), and the receiver MUST answer
// promptly (basic/utilities/ping.mdx §Behavior Requirements). A server that waits for the pong before its
// answer would otherwise hold the request until a timeout. A call's own stream is read through CallInbox,
// the GET stream by ListenHub; this is for the other answers the bridges and the era probe read.

import type { Logger } from '../log/logger.js';
import type { JsonRpcMessage, JsonRpcRequest } from '../protocol/jsonrpc.js';
import type { UpstreamMessages } from '../pipeline/ports.js';

/** The messages of an answer without its pings, each handed to `answer` as it arrives. */
export async function* answeringPings(messages: AsyncGenerator<JsonRpcMessage, void, void>, answer: (ping: JsonRpcRequest) => void): AsyncGenerator<JsonRpcMessage, void, void> {
  for await (const message of messages) {
    if ('method' in message && message.method === 'ping' && 'id' in message && message.id !== undefined) answer(message as JsonRpcRequest);
    else yield message;
  }
}

/** Answers a ping on the session `headers` name, without waiting; a failure is only logged. */
export function pong(client: UpstreamMessages, headers: Record<string, string>, ping: JsonRpcRequest, log: Pick<Logger, 'warn'>): void {
  void (async () => {
    const reply = await client.post({ jsonrpc: '2.0', id: ping.id, result: {} }, headers);
    for await (const _ of reply.messages) {
      // a 202: nothing to read
    }
  })().catch((err: unknown) => log.warn('an answer to the upstream could not be sent', { method: 'ping', err }));
}
