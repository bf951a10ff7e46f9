// What the session machinery of src/upstream/stdio-*.ts needs from the thing it talks to: a message channel
// that starts, answers requests by id, takes notifications and responses, hands on everything else, and
// says once when it is gone. A stdio child process is one (stdio-process.ts); a session with an HTTP+SSE
// server is another (sse-channel.ts).

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
}

export type ChannelFactory = () => MessageChannel;
