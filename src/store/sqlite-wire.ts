// What the SQLite store (sqlite-store.ts) and its writer thread (sqlite-worker.ts) pass each other: flat
// arrays of values, not arrays of objects. A message crosses threads by structured clone, which writes every
// object's properties one by one and rebuilds the object, property by property, on the other side. For a
// group of 14 audit appends that cost about a third of the round trip's CPU (a loop of round trips in
// isolation: 160–195 µs with one object per request, 135–145 µs flat).

/** What the writer thread is started with: the file, and whether it must already be a Gatehouse store (SqliteStoreOptions). */
export interface SqliteWorkerData {
  path: string;
  existing: boolean;
  /** A reader's private directory: the store is copied into it and read there (sqlite-read-copy.ts). */
  copyTo?: string;
}

/** One operation for the writer: its id (answered with the same), its name and its arguments. */
export interface WorkerRequest {
  id: number;
  op: string;
  args: unknown[];
}

/** Requests one after the other, each as its id, its operation, its number of arguments, then those. */
export type WorkerMessage = unknown[];

/** Replies one after the other, each as its id, then `true` and its value, or `false` and the error's message. */
export type WorkerReplies = unknown[];

export function encodeRequests(requests: readonly WorkerRequest[]): WorkerMessage {
  const flat: unknown[] = [];
  for (const { id, op, args } of requests) {
    flat.push(id, op, args.length);
    for (const arg of args) flat.push(arg);
  }
  return flat;
}

/** Calls `each` with every request of a message, in order. */
export function forEachRequest(message: WorkerMessage, each: (id: number, op: string, args: unknown[]) => void): void {
  for (let i = 0; i < message.length; ) {
    const argc = message[i + 2] as number;
    each(message[i] as number, message[i + 1] as string, message.slice(i + 3, i + 3 + argc));
    i += 3 + argc;
  }
}

/** Calls `each` with every reply of a message, in order. */
export function forEachReply(replies: WorkerReplies, each: (id: number, ok: boolean, value: unknown) => void): void {
  for (let i = 0; i + 2 < replies.length; i += 3) each(replies[i] as number, replies[i + 1] as boolean, replies[i + 2]);
}
