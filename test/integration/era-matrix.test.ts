// The era matrix: {v1 SDK client (legacy), v2 client pinned to 2026-07-28, v2 client in `auto` mode}
// × {legacy upstream: server-everything over Streamable HTTP; modern upstream: v2 `createMcpHandler` with
// `legacy: 'reject'`} × {tools/list, tools/call, a progress-reporting call, an elicitation round trip} —
// every cell must work through Gatehouse (GATEWAY-REQUIREMENTS §16: the gateway is the bridge).
//
// Three groups:
//   1. The matrix, through Gatehouse (one gateway per upstream, era `auto`).
//   2. Control, no gateway: each client straight at each upstream, tools/list only, with the outcome the
//      spec's compatibility matrix predicts (2026-07-28/basic/versioning.mdx §Compatibility Matrix):
//      same era works, Modern→Legacy fails, Legacy→Modern fails, Dual-era (auto) → either works. This is
//      what shows the gateway is what makes the cross-era cells of group 1 work.
//   3. Reference, no gateway: every client × every operation straight at a dual-era server (the same v2
//      fixture, serving 2025 sessions beside 2026-07-28) whose tools mirror server-everything's. It proves
//      the cell logic of group 1 — for both eras of each client — so a failing matrix cell is a gateway bug,
//      not a test bug.
//
// Spec references: L = shared/spec/docs/specification/2025-11-25/, M = …/2026-07-28/.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEverythingHttp, startEverythingSse, type EverythingHttp } from '../fixtures/upstreams/everything-http.js';
import { startModernMatrixServer, type ModernMatrixServer } from '../fixtures/upstreams/modern-matrix-server.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { COMMON_TOOLS, createCellRunner, OPERATIONS, type MatrixUpstream } from '../helpers/matrix-cells.js';
import { CLIENT_KINDS, connectClient, describeError, type ClientKind, type MatrixClient } from '../helpers/matrix-clients.js';

/** Bound on each client connect and each request. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Bound on each test, above the request bound so the client's own error is what surfaces. */
const TEST_TIMEOUT_MS = 30_000;

// ---- processes and servers ---------------------------------------------------------------------------

let everything: EverythingHttp | undefined;
let everythingSse: EverythingHttp | undefined;
let modern: ModernMatrixServer | undefined;
let dualEra: ModernMatrixServer | undefined;
let gwLegacy: TestGateway | undefined;
let gwModern: TestGateway | undefined;
let gwSse: TestGateway | undefined;

before(async () => {
  everything = await startEverythingHttp();
  modern = await startModernMatrixServer({ legacy: 'reject' });
  dualEra = await startModernMatrixServer({ legacy: 'sessions' });
  // Each gateway also takes clients of the HTTP+SSE transport on /sse (the SSE client row).
  gwLegacy = await startGateway({ upstreams: [{ name: 'everything', url: everything.url }], listen: { ssePath: '/sse' } });
  gwModern = await startGateway({ upstreams: [{ name: 'modern', url: modern.url }], listen: { ssePath: '/sse' } });
  // The HTTP+SSE column (issue 16): server-everything in its 2024-11-05 SSE mode, found by transport: auto.
  everythingSse = await startEverythingSse();
  gwSse = await startGateway({ upstreams: [{ name: 'everything', url: everythingSse.url }], listen: { ssePath: '/sse' } });
});

after(async () => {
  // Gateways first (they hold pooled connections to the upstreams), then the servers; server-everything
  // is a child process and its close() kills it by PID and waits for the exit.
  await gwLegacy?.close();
  await gwModern?.close();
  await gwSse?.close();
  await everythingSse?.close();
  await dualEra?.close();
  await modern?.close();
  await everything?.close();
});

function must<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} did not start`);
  return value;
}

// ---- the upstream axis -------------------------------------------------------------------------------

type UpstreamKey = 'legacy' | 'modern' | 'sse';

interface UpstreamSpec extends MatrixUpstream {
  key: UpstreamKey;
  /** The upstream's endpoint (no gateway). */
  directUrl(): string;
  /** Gatehouse's endpoint in front of it. */
  gatewayUrl(): string;
}

const UPSTREAMS: readonly UpstreamSpec[] = [
  {
    key: 'legacy',
    label: 'legacy upstream',
    directUrl: () => must(everything, 'server-everything').url,
    gatewayUrl: () => must(gwLegacy, 'gateway (legacy upstream)').url,
    marker: 'get-sum',
  },
  {
    key: 'modern',
    label: 'modern upstream',
    directUrl: () => must(modern, 'modern fixture').url,
    gatewayUrl: () => must(gwModern, 'gateway (modern upstream)').url,
    marker: 'modern-fixture-marker',
  },
  {
    // 2025-11-25 basic/transports.mdx §Backwards Compatibility: the HTTP+SSE transport of 2024-11-05.
    key: 'sse',
    label: 'HTTP+SSE upstream',
    directUrl: () => must(everythingSse, 'server-everything (SSE)').url,
    gatewayUrl: () => must(gwSse, 'gateway (SSE upstream)').url,
    marker: 'get-sum',
  },
];

/** The dual-era reference server; its tools mirror server-everything's plus the modern marker. */
const DUAL_ERA: UpstreamSpec = {
  key: 'modern',
  label: 'dual-era upstream',
  directUrl: () => must(dualEra, 'dual-era fixture').url,
  gatewayUrl: () => must(dualEra, 'dual-era fixture').url,
  marker: 'modern-fixture-marker',
};

// ---- the operation axis ------------------------------------------------------------------------------

// OPERATIONS and the cell runner are shared with the stdio matrix (../helpers/matrix-cells.ts). What each
// operation exercises here:
//   tools/list  — L: server/tools.mdx §Listing Tools; M: server/tools.mdx §Listing Tools. Across eras:
//                 M: basic/versioning.mdx §Compatibility Matrix (Modern→Legacy and Legacy→Modern fail without
//                 a bridge) and GATEWAY-REQUIREMENTS §16.1/§16.2 "Handshake synthesis" (the gateway answers
//                 `server/discover` / `initialize` itself and forwards the list).
//   tools/call  — of `echo`. L: server/tools.mdx §Calling Tools; M: server/tools.mdx §Calling Tools; across
//                 eras M: basic/versioning.mdx §Compatibility Matrix + GATEWAY-REQUIREMENTS §16.1/§16.2
//                 "`_meta`" and "Results" (per-request `_meta` injected/stripped, `resultType` added/stripped).
//   progress    — a progress-reporting call. L: basic/utilities/progress.mdx and basic/transports.mdx §Sending
//                 Messages to the Server 6 (notifications on the POST's SSE stream before the response); M:
//                 basic/patterns/progress.mdx (`_meta.progressToken`, increasing `progress`) and
//                 basic/transports/streamable-http.mdx §Receiving Messages (only on the originating request's
//                 stream); GATEWAY-REQUIREMENTS §11, §16.1 (progressToken kept/remapped).
//   prompts/get — `simple-prompt`. L and M: server/prompts.mdx §Getting a Prompt; across eras as tools/call.
//   resources/read — a templated URI. L and M: server/resources.mdx §Reading Resources; across eras as tools/call
//                 (M: -32002 is gone, resources not found are -32602: server/resources.mdx §Error Handling).
//   elicitation — a round trip. Legacy: the server sends `elicitation/create` as a JSON-RPC request on the
//                 tools/call POST's SSE stream and the client POSTs the answer (L: client/elicitation.mdx §Form
//                 Mode Flow; L: basic/transports.mdx §Sending Messages to the Server 4, 6). Modern: no
//                 server-initiated requests — the server answers `InputRequiredResult` and the client retries
//                 with `inputResponses` (M: basic/patterns/mrtr.mdx §Basic Workflow; M: server/tools.mdx §Input
//                 Required Tool Results; M: client/elicitation.mdx §Form Mode Flow). Across eras:
//                 GATEWAY-REQUIREMENTS §16.1 / §16.2 "MRTR ⇄ server-initiated requests".

// ---- running one cell --------------------------------------------------------------------------------

const runCell = createCellRunner({ tagPrefix: 'cell', requestTimeoutMs: REQUEST_TIMEOUT_MS });

// ---- 1. the matrix, through Gatehouse ----------------------------------------------------------------

for (const kind of CLIENT_KINDS) {
  for (const upstream of UPSTREAMS) {
    for (const op of OPERATIONS) {
      test(`${kind} → ${upstream.label}: ${op.label}`, { timeout: TEST_TIMEOUT_MS }, () => runCell(kind, upstream.gatewayUrl(), upstream, op));
    }
  }
}

// The HTTP+SSE client row (issue 16): the v1 SDK's SSEClientTransport on each gateway's /sse, in front of
// every upstream (2025-11-25 basic/transports.mdx §Backwards Compatibility).
for (const upstream of UPSTREAMS) {
  for (const op of OPERATIONS) {
    test(`v1-sse-client → ${upstream.label}: ${op.label}`, { timeout: TEST_TIMEOUT_MS }, () => runCell('v1-sse-client', () => `${new URL(upstream.gatewayUrl()).origin}/sse`, upstream, op));
  }
}

// ---- 2. control, no gateway: what the spec's compatibility matrix predicts ---------------------------

// M: basic/versioning.mdx §Compatibility Matrix. The v1 client is Legacy; the pinned v2 client is Modern;
// the auto v2 client is Dual-era. server-everything is Legacy; the `legacy: 'reject'` fixture is Modern.
interface ControlExpectation {
  outcome: 'works' | 'fails';
  /** For 'works': the era the client ends up in. For 'fails': what the client's error must say. */
  era?: 'legacy' | 'modern';
  error?: RegExp;
  why: string;
}

const CONTROL: Record<ClientKind, Record<Exclude<UpstreamKey, 'sse'>, ControlExpectation>> = {
  'v1-legacy-client': {
    legacy: { outcome: 'works', era: 'legacy', why: 'Legacy ↔ Legacy works' },
    // Legacy → Modern fails: the modern-only endpoint rejects `initialize` with 400; it SHOULD name the
    // versions it supports (M: basic/versioning.mdx §Backward Compatibility…), which this one does (-32022).
    modern: { outcome: 'fails', error: /-32022[\s\S]*2026-07-28/, why: 'Legacy → Modern fails: initialize is rejected' },
  },
  'v2-pinned-client': {
    // Modern → Legacy fails: the `server/discover` probe gets a non-modern 400, and a pinned client has no fallback.
    legacy: { outcome: 'fails', error: /did not offer pinned protocol version 2026-07-28/, why: 'Modern → Legacy fails' },
    modern: { outcome: 'works', era: 'modern', why: 'Modern ↔ Modern works' },
  },
  'v2-auto-client': {
    legacy: { outcome: 'works', era: 'legacy', why: 'Dual-era → Legacy works: falls back to initialize' },
    modern: { outcome: 'works', era: 'modern', why: 'Dual-era → Modern works: stays modern' },
  },
};

// The SSE upstream has no control row: none of these Streamable HTTP clients can speak to it directly.
for (const kind of CLIENT_KINDS) {
  for (const upstream of UPSTREAMS.filter((u): u is UpstreamSpec & { key: 'legacy' | 'modern' } => u.key !== 'sse')) {
    const expected = CONTROL[kind][upstream.key];
    test(`control (no gateway): ${kind} → ${upstream.label}: tools/list ${expected.outcome} (${expected.why})`, { timeout: TEST_TIMEOUT_MS }, async () => {
      if (expected.outcome === 'works') {
        const client = await connectClient(kind, upstream.directUrl(), { timeoutMs: REQUEST_TIMEOUT_MS });
        try {
          assert.equal(client.era(), expected.era);
          const names = await client.listToolNames();
          for (const name of [...COMMON_TOOLS, upstream.marker]) assert.ok(names.includes(name), `tools/list lacks ${name}: ${names.join(', ')}`);
        } finally {
          await client.close();
        }
        return;
      }
      const opened: MatrixClient[] = [];
      try {
        await assert.rejects(
          async () => {
            const client = await connectClient(kind, upstream.directUrl(), { timeoutMs: REQUEST_TIMEOUT_MS });
            opened.push(client);
            await client.listToolNames();
          },
          (err: unknown) => {
            assert.match(describeError(err), expected.error!);
            return true;
          },
        );
      } finally {
        for (const client of opened) await client.close();
      }
    });
  }
}

// ---- 3. reference, no gateway: every cell's logic against a dual-era server ---------------------------

// M: basic/versioning.mdx §Compatibility Matrix — Legacy → Dual-era works, Modern/Dual-era → Dual-era works
// (modern). The dual-era server serves both eras with one tool set mirroring server-everything's, so each
// client runs every operation of the matrix in the era it will speak to Gatehouse.
const DUAL_ERA_EXPECTED_ERA: Record<ClientKind, 'legacy' | 'modern'> = {
  'v1-legacy-client': 'legacy',
  'v2-pinned-client': 'modern',
  'v2-auto-client': 'modern',
};

for (const kind of CLIENT_KINDS) {
  test(`reference (no gateway): ${kind} → dual-era upstream: negotiates ${DUAL_ERA_EXPECTED_ERA[kind]}`, { timeout: TEST_TIMEOUT_MS }, async () => {
    const client = await connectClient(kind, DUAL_ERA.directUrl(), { timeoutMs: REQUEST_TIMEOUT_MS });
    try {
      assert.equal(client.era(), DUAL_ERA_EXPECTED_ERA[kind]);
    } finally {
      await client.close();
    }
  });
  for (const op of OPERATIONS) {
    test(`reference (no gateway): ${kind} → dual-era upstream: ${op.label}`, { timeout: TEST_TIMEOUT_MS }, () => runCell(kind, DUAL_ERA.directUrl(), DUAL_ERA, op));
  }
}
