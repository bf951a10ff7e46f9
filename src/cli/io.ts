// What a command may touch of the outside world, passed in so tests can run commands in-process.

export interface CommandIO {
  out(text: string): void;
  /**
   * Resolves once `out` may be given more: a command that writes without end (audit export, tail) waits on
   * it, since writes to a pipe are queued in memory, and one faster than its reader (`| gzip`, `| jq`) held
   * the whole of what it wrote.
   */
  outReady?(): Promise<void>;
  err(text: string): void;
  readStdin(): Promise<string>;
  env: NodeJS.ProcessEnv;
}

/** stdout refused more (write returned false) and has not drained since. */
let stdoutFull = false;

export const processIO: CommandIO = {
  out: (t) => {
    if (!process.stdout.write(t)) stdoutFull = true;
  },
  outReady: () => {
    // A reader that went away (EPIPE, closed) drains nothing: the wait ends then too, or at once if it has.
    if (!stdoutFull || process.stdout.destroyed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        stdoutFull = false;
        process.stdout.off('drain', done).off('close', done).off('error', done);
        resolve();
      };
      process.stdout.once('drain', done).once('close', done).once('error', done);
    });
  },
  err: (t) => process.stderr.write(t),
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
  env: process.env,
};
