// A gateway in front of a real v1 SDK server with one `echo` tool, routed as the SDK's examples before 2026
// route sessions: a session it does not know (after forgetSessions(), as a restarted server) gets 400 "Bad
// Request: No valid session ID provided", not 404. For the tests of what the modern-client bridge does with
// that 400 (session-unknown.ts).

import { z } from 'zod';
import { startV1HttpServer, type V1HttpServer } from '../fixtures/upstreams/v1-http-server.js';
import { startGateway, type TestGateway } from './gateway.js';

export interface Session400Setup {
  up: V1HttpServer;
  /** Its one upstream is named `legacy` (era: legacy). */
  gw: TestGateway;
  close(): Promise<void>;
}

export async function startGatewayInFrontOfSession400Server(): Promise<Session400Setup> {
  const up = await startV1HttpServer(
    (server) => {
      server.registerTool('echo', { description: 'Echoes', inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
    },
    {},
    { unknownSession: 'bad-request' },
  );
  const gw = await startGateway({ upstreams: [{ name: 'legacy', url: up.url, era: 'legacy' }] });
  return {
    up,
    gw,
    async close() {
      await gw.close();
      await up.close();
    },
  };
}
