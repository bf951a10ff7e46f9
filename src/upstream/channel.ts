// What the session machinery of src/upstream/stdio-*.ts needs from the thing it talks to: a message channel
// that starts, answers requests by id, takes notifications and responses, hands on everything else, and
// says once when it is gone. A stdio child process is one (stdio-process.ts); a session with an HTTP+SSE
// server is another (sse-channel.ts).

import { GatewayError } from '../errors.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../protocol/jsonrpc.js';

export interface MessageChannel {
  start(): Promise<void>;
  /** `timed` false: the request waits as long as it takes (a listen, which is answered when it ends). */
  request(msg: JsonRpcRequest, signal?: AbortSignal, timed?: boolean): Promise<JsonRpcResponse>;
  /** Stops the clock of a request while it waits on its client's input; `resume` starts it afresh. */
  hold(id: JsonRpcId): void;
  resume(id: JsonRpcId): void;
  /**
   * Stops waiting for the answer to request `id`, sending nothing: its client cancelled it and the server was
   * told so. Its `request` promise rejects with RequestAbandoned; an answer that still comes is dropped.
   */
  abandon(id: JsonRpcId): void;
  send(msg: JsonRpcMessage): void;
  stop(graceMs?: number): Promise<void>;
  onMessage: (msg: JsonRpcMessage) => void;
  onExit: (reason: string) => void;
  readonly alive: boolean;
  /** The child's process id, for logs and tests; undefined for a channel that is no process. */
  readonly pid: number | undefined;
  /** True once stop() was called: an end now is expected, not a crash. */
  readonly stoppedOnPurpose: boolean;
  /**
   * Whether request `id` was refused before the server took it, as the channel ended (an HTTP+SSE server
   * that no longer knows the session answers its POST 404): it may be sent again on the next channel. Read
   * in onExit; its `request` promise rejects with NotDelivered. A stdio child has none (a written line may
   * have been read).
   */
  undelivered?(id: JsonRpcId): boolean;
}

/** A request the server never took, its session gone (MessageChannel.undelivered): safe to send again, once. */
export class NotDelivered extends GatewayError {
  constructor(message: string, upstream: string) {
    super('GW_ERR_UPSTREAM_EXITED', message, upstream);
    this.name = 'NotDelivered';
  }
}

export type ChannelFactory = () => MessageChannel;
