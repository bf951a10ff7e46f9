// What a command may touch of the outside world, passed in so tests can run commands in-process.

export interface CommandIO {
  out(text: string): void;
  err(text: string): void;
  readStdin(): Promise<string>;
  env: NodeJS.ProcessEnv;
}

export const processIO: CommandIO = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
  env: process.env,
};
