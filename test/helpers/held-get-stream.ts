// A fetch for the v1 SDK's StreamableHTTPClientTransport whose GET requests (the client's GET stream) wait
// until the test opens them: the SDK opens its GET stream without waiting for it after
// `notifications/initialized`, so a request sent right after connect may overtake it; held, it does.

export interface HeldGetStream {
  fetch: typeof fetch;
  /** Lets the held GET requests (and later ones) go. */
  open(): void;
  /** Whether a GET request has gone since open(). */
  opened(): boolean;
}

export function heldGetStream(): HeldGetStream {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let opened = false;
  return {
    fetch: async (input, init) => {
      if ((init?.method ?? 'GET') === 'GET') {
        await gate;
        opened = true;
      }
      return fetch(input, init);
    },
    open,
    opened: () => opened,
  };
}
