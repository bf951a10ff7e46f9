// Servers and verifiers a test file starts, closed once when the file's tests are done.

import { after } from 'node:test';
import type { Server } from 'node:http';

export function closedAfterTests<V extends { close(): void }>(): { servers: Server[]; verifiers: V[] } {
  const servers: Server[] = [];
  const verifiers: V[] = [];
  after(async () => {
    for (const v of verifiers) v.close();
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise<void>((r) => s.close(() => r()));
    }
  });
  return { servers, verifiers };
}
