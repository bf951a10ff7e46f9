// The era matrix over stdio upstreams: {v1 SDK client (legacy), v2 client pinned to 2026-07-28, v2 client in
// `auto` mode} × {legacy stdio upstream: server-everything run as `… dist/index.js stdio`; modern stdio
// upstream: the v2 `serveStdio(…, { legacy: 'reject' })` fixture} × {tools/list, tools/call, a
// progress-reporting call, an elicitation round trip} — every cell through Gatehouse (clients speak
// Streamable HTTP to the gateway; the gateway spawns the upstream and speaks stdio to it), one gateway per
// upstream kind, upstream era `auto`.
//
// The cell logic (operations, answers, assertions) is the HTTP era matrix's (era-matrix.test.ts), whose
// reference group proves it against a dual-era server; only the upstream's transport differs here.
//
// Spec references: L = shared/spec/docs/specification/2025-11-25/, M = …/2026-07-28/.
//   Across eras:     M basic/versioning.mdx §Compatibility Matrix (Modern→Legacy and Legacy→Modern fail
//                    without a bridge; Gatehouse is the bridge, GATEWAY-REQUIREMENTS §16).
//   Stdio binding:   M basic/transports/stdio.mdx (newline-delimited JSON-RPC on stdin/stdout; §Shutdown:
//                    close stdin, then SIGTERM, then SIGKILL) and L basic/transports.mdx §stdio.
//   Modern elicit:   M basic/patterns/mrtr.mdx (InputRequiredResult + retry with `inputResponses`).

import { before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { createCellRunner, OPERATIONS, type MatrixUpstream } from '../helpers/matrix-cells.js';
import { CLIENT_KINDS } from '../helpers/matrix-clients.js';
import { gatewaysCheckedForLeakedChildren } from '../helpers/stdio-children.js';

/** Bound on each client connect and each request (covers spawning the child on first use). */
const REQUEST_TIMEOUT_MS = 15_000;
/** Bound on each test, above the request bound so the client's own error is what surfaces. */
const TEST_TIMEOUT_MS = 40_000;
/** How long a child may take to exit once its gateway is closed before it counts as left behind. */
const CHILD_EXIT_WAIT_MS = 10_000;

const EVERYTHING = 'node_modules/@modelcontextprotocol/server-everything/dist/index.js';
/** Plain-JS launcher of the TypeScript fixture, so it spawns with bare node. */
const MODERN_STDIO = fileURLToPath(new URL('../fixtures/upstreams/modern-stdio-server.mjs', import.meta.url));

// ---- gateways and their children ---------------------------------------------------------------------

// M basic/transports/stdio.mdx §Shutdown: the gateway (the client of its children) ends them on close.
// Anything still running after a bounded wait is stopped, by PID, and reported as a leak.
const gateways = gatewaysCheckedForLeakedChildren(CHILD_EXIT_WAIT_MS);
let gwLegacy: TestGateway | undefined;
let gwModern: TestGateway | undefined;

before(async () => {
  gwLegacy = await startGateway({ upstreams: [{ name: 'everything', command: [process.execPath, EVERYTHING, 'stdio'] }] });
  gateways.push(gwLegacy);
  gwModern = await startGateway({ upstreams: [{ name: 'modern', command: [process.execPath, MODERN_STDIO] }] });
  gateways.push(gwModern);
});

function must<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} did not start`);
  return value;
}

// ---- the upstream axis -------------------------------------------------------------------------------

interface UpstreamSpec extends MatrixUpstream {
  /** Gatehouse's endpoint in front of it. */
  gatewayUrl(): string;
}

const UPSTREAMS: readonly UpstreamSpec[] = [
  {
    // server-everything over stdio: a Legacy server (L basic/lifecycle.mdx `initialize`; L basic/transports.mdx
    // §stdio). Legacy clients get a child per session; modern clients are bridged (M basic/versioning.mdx
    // §Compatibility Matrix, Modern → Legacy).
    label: 'legacy stdio upstream',
    gatewayUrl: () => must(gwLegacy, 'gateway (legacy stdio upstream)').url,
    marker: 'get-sum',
  },
  {
    // The v2 `serveStdio(…, { legacy: 'reject' })` fixture: a Modern-only server (M basic/transports/stdio.mdx;
    // M basic/versioning.mdx §Compatibility Matrix, Legacy → Modern fails without the gateway's bridge).
    label: 'modern stdio upstream',
    gatewayUrl: () => must(gwModern, 'gateway (modern stdio upstream)').url,
    marker: 'modern-fixture-marker',
  },
];

// ---- the operation axis ------------------------------------------------------------------------------

// OPERATIONS and the cell runner are the HTTP matrix's (../helpers/matrix-cells.ts). What each operation
// exercises over stdio:
//   tools/list  — L/M server/tools.mdx §Listing Tools; across eras M basic/versioning.mdx §Compatibility
//                 Matrix (the gateway answers `server/discover` / `initialize` itself and forwards the list);
//                 over stdio M basic/transports/stdio.mdx (one JSON-RPC message per line).
//   tools/call  — of `echo`. L/M server/tools.mdx §Calling Tools; across eras M basic/versioning.mdx
//                 §Compatibility Matrix (per-request `_meta` envelope injected/stripped, `resultType`
//                 added/stripped); M basic/transports/stdio.mdx.
//   progress    — a progress-reporting call. L basic/utilities/progress.mdx; M basic/patterns/progress.mdx
//                 (`_meta.progressToken`, increasing `progress`); the child writes them on stdout (M
//                 basic/transports/stdio.mdx) and the gateway relays them on the originating POST's SSE stream
//                 before the response (L basic/transports.mdx §Sending Messages to the Server 6; M
//                 basic/transports/streamable-http.mdx §Receiving Messages); across eras M basic/versioning.mdx
//                 §Compatibility Matrix.
//   elicitation — a round trip. Legacy: `elicitation/create` as a server→client request (L
//                 client/elicitation.mdx §Form Mode Flow; on stdio the child writes it on stdout and reads the
//                 answer on stdin, L basic/transports.mdx §stdio; on HTTP L basic/transports.mdx §Sending
//                 Messages to the Server 4, 6). Modern: MRTR — `InputRequiredResult`, then a retry with
//                 `inputResponses` (M basic/patterns/mrtr.mdx §Basic Workflow; M server/tools.mdx §Input
//                 Required Tool Results; M client/elicitation.mdx §Form Mode Flow). Across eras M
//                 basic/versioning.mdx §Compatibility Matrix.

// ---- running one cell --------------------------------------------------------------------------------

const runCell = createCellRunner({ tagPrefix: 'stdio-cell', requestTimeoutMs: REQUEST_TIMEOUT_MS });

// ---- the matrix, through Gatehouse -------------------------------------------------------------------

// Each cell: M basic/versioning.mdx §Compatibility Matrix (the client's era against the upstream's, bridged
// by the gateway) + M basic/transports/stdio.mdx (the upstream leg) + the operation's own section above
// (MRTR, M basic/patterns/mrtr.mdx, for elicitation on a modern leg).
for (const kind of CLIENT_KINDS) {
  for (const upstream of UPSTREAMS) {
    for (const op of OPERATIONS) {
      test(`${kind} → ${upstream.label}: ${op.label}`, { timeout: TEST_TIMEOUT_MS }, () => runCell(kind, () => upstream.gatewayUrl(), upstream, op));
    }
  }
}
