// Waiting for a slow client: resolves when the socket drains, closes, or the exchange is aborted.

export function waitForDrain(res: NodeJS.WritableStream, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
    signal.addEventListener('abort', done);
  });
}
