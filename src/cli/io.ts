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

/**
 * A write the reader did not take (EPIPE once it has gone) is an `error` event on stdout, which unheard
 * ends the process with a stack trace; it is heard here, and a command that writes on learns of it from
 * outReady (stdout.errored).
 */
let stdoutErrorsHeard = false;

export const processIO: CommandIO = {
  out: (t) => {
    if (!stdoutErrorsHeard) {
      stdoutErrorsHeard = true;
      process.stdout.on('error', () => {});
    }
    if (!process.stdout.write(t)) stdoutFull = true;
  },
  outReady: () => {
    // A reader that went away (`| head`) takes nothing more: the command stops instead of writing the rest
    // of what it reads into a closed pipe (and the shell waiting for it).
    const closed = (err?: unknown): Error => {
      const code = (err as NodeJS.ErrnoException | null | undefined)?.code;
      return new Error(`the output was closed before everything was written${typeof code === 'string' ? ` (${code})` : ''}`);
    };
    if (process.stdout.errored || process.stdout.destroyed) return Promise.reject(closed(process.stdout.errored));
    if (!stdoutFull) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const drained = (): void => {
        stop();
        stdoutFull = false;
        resolve();
      };
      const failed = (err?: unknown): void => {
        stop();
        reject(closed(err ?? process.stdout.errored));
      };
      const stop = (): void => void process.stdout.off('drain', drained).off('close', failed).off('error', failed);
      process.stdout.once('drain', drained).once('close', failed).once('error', failed);
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
