// What the edge fuzzer sends: arbitraries for one case (a well-formed MCP request of either era, then
// mutated fields, headers, body and framing) and its rendering to wire bytes. Runtime values (port, keys,
// session, marker) stay {TOKENS} in the plan, so a counterexample reads like the request and replays anywhere.

import fc from 'fast-check';

export type Target = 'legacy' | 'modern' | 'catalog' | 'governed';
export const TARGETS: readonly Target[] = ['legacy', 'modern', 'catalog', 'governed'];

/** API keys the gateways know: scoped, a second caller, no scope, expired, disabled, restricted to echo*. */
export const KEY_NAMES = ['A', 'B', 'NOSCOPE', 'EXPIRED', 'DISABLED', 'LIMITED'] as const;
export type KeyName = (typeof KEY_NAMES)[number];

export type SessionKind = 'none' | 'fresh' | 'fresh-other' | 'fresh-deleted' | 'pool' | 'madeup';

export interface RenderContext {
  port: number;
  keys: Record<KeyName, string>;
  /** The session id this case resolved ('' when none). */
  session: string;
  /** The newest requestState the target handed out ('' when none yet), and its first input request's key. */
  state: string;
  inputKey: string;
  marker: string;
  maxBodyBytes: number;
}

export type FieldOp = { path: string[]; value: unknown } | { path: string[]; delete: true };
export type HeaderOp =
  | { op: 'drop'; name: string }
  | { op: 'set'; name: string; value: string }
  | { op: 'dup'; name: string; value?: string }
  | { op: 'case'; name: string }
  | { op: 'pad'; name: string };

export type BodyPlan =
  | { kind: 'json' }
  | { kind: 'pretty' }
  | { kind: 'raw'; bytes: number[] }
  | { kind: 'invalid-utf8'; seq: number[] }
  | { kind: 'truncate'; keep: number }
  | { kind: 'deep'; depth: number; open: '[' | '{' | 'mixed'; where: 'params' | 'top' | 'string' }
  | { kind: 'batch'; count: number }
  | { kind: 'empty' }
  | { kind: 'literal'; text: string }
  | { kind: 'huge'; delta: number }
  | { kind: 'bom' }
  | { kind: 'dupkey'; key: string; value: unknown; first?: boolean };

export type Framing = 'cl' | 'chunked' | 'none' | 'cl-short' | 'cl-long' | 'cl+te';

export interface Seed {
  kind: 'request' | 'notification' | 'response';
  method: string;
  id: string | number;
  params: Record<string, unknown> | undefined;
}

export interface CasePlan {
  target: Target;
  http: string;
  path: string;
  /** The client's era: 'modern', a legacy version, or 'legacy-none' (no MCP-Protocol-Version header). */
  era: string;
  auth: 'A' | 'B' | 'NOSCOPE' | 'EXPIRED' | 'DISABLED' | 'LIMITED' | 'none' | 'garbage' | 'query' | 'body';
  session: SessionKind;
  xff: string | null;
  trace: boolean;
  seed: Seed;
  fieldOps: FieldOp[];
  body: BodyPlan;
  /** GET, DELETE and friends send no body unless this is set. */
  bodyOnAnyMethod: boolean;
  headerOps: HeaderOp[];
  framing: Framing;
  /** A modern client declares elicitation, sampling and roots (so a bridged server request becomes MRTR). */
  declares: boolean;
  /** When the answer is an InputRequiredResult, how the client retries at once (2026-07-28 mrtr.mdx). */
  mrtr: 'none' | 'accept' | 'decline' | 'wrong-key' | 'tampered' | 'twice';
  /** Copies sent at once (each with its own marker), for races in sessions and bridges. */
  parallel: number;
  /** The client hangs up this long after sending, without reading the answer. */
  abortAfterMs: number | null;
}

const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
const MODERN = '2026-07-28';
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
const META_CAPS = 'io.modelcontextprotocol/clientCapabilities';
const META_INFO = 'io.modelcontextprotocol/clientInfo';
const META_LEVEL = 'io.modelcontextprotocol/logLevel';

/** Stands for the newest `requestState` a gateway handed out (an MRTR retry), filled in at render time. */
export const STATE_TOKEN = '{STATE}';
/** Stands for the key of the first input request in that result. */
export const INPUT_KEY_TOKEN = '{INPUT_KEY}';

/** A string of this form is written into the JSON text as the raw token after the colon. */
const RAW = '\u0000RAW:';

/** Tool names per target: what the upstream lists (public names through the catalog), and some it does not. */
const TOOL_NAMES: Record<Target, string[]> = {
  legacy: ['echo', 'add', 'fault', 'echo', 'add'],
  modern: ['echo', 'add', 'query', 'fault', 'query', 'echo'],
  catalog: ['alpha_echo', 'alpha_add', 'alpha_fault', 'alpha_read_file', 'beta_echo', 'beta_query', 'beta_fault', 'beta_add'],
  governed: ['echo', 'add', 'fault', 'echo', 'add'],
};

/**
 * URLs the governed gateway's egress rule blocks, each written the way a real HTTP client reads as a
 * loopback, metadata or unlisted address (README §Policy: obfuscations are undone first). Plain ASCII
 * without quotes or backslashes, so the upstream's JSON text holds each as written.
 */
export const EGRESS_DENIED = [
  'http://127.0.0.1:9/x',
  'http://169.254.169.254/latest/meta-data/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::1]:80/',
  'http://2130706433/',
  'http://0x7f.0.0.1/',
  'http://127.1/',
  'http://0177.0.0.1/',
  'http://192.0.2.10@127.0.0.1/',
  'HTTP://LOCALHOST:3000/',
  'http://192.0.2.11/',
  'https://192.0.2.10.nip.io/',
  'ftp://192.0.2.10/',
  'http:127.0.0.1:9/y',
  'https:/169.254.169.254/z',
] as const;
/** The one destination its rule allows (TEST-NET-1, named by address), alone and inside text. */
const EGRESS_ALLOWED = ['http://192.0.2.10/ok', 'fetch https://192.0.2.10:443/a please'];
/**
 * The governed gateway's write tool takes keys from a small pool, so replays and conflicts happen, or a
 * fresh one, so writes keep running (a key once run replays for a day).
 */
const IDEMPOTENCY_KEYS = 6;
/** Stands for the case's credential name in an idempotency key: one caller's keys are never another's. */
export const AUTH_TOKEN = '{AUTH}';
const UNKNOWN_TOOLS = ['nope', 'echo ', 'read.file', 'alpha/echo', 'ECHO', '', 'é', 'a'.repeat(200), '__proto__', 'toString', 'constructor'];

/** Slow faults cost a gateway timeout each, so they are rare. */
const FAULTS: Array<{ weight: number; arbitrary: fc.Arbitrary<string> }> = [
  { weight: 10, arbitrary: fc.constantFrom('reset', 'garbage', 'http500', 'http404', 'http401', 'empty200', 'html', 'sse_cut', 'sse_ok', 'wrong_id', 'big', 'elicit', 'deep', 'none') },
  { weight: 1, arbitrary: fc.constant('slow') },
];

// ---------------------------------------------------------------------------------------------------------
// JSON values of every type, including the ones that break careless code.

const HOSTILE_JSON = [
  '{"toString":1}',
  '{"valueOf":{}}',
  '{"toString":"x","valueOf":1}',
  '{"__proto__":{"polluted":1}}',
  '{"constructor":{"prototype":{"polluted":1}}}',
  '{"length":-1}',
  '{"then":1}',
  '{"toJSON":1}',
  '{"hasOwnProperty":1}',
  '[]',
  '{}',
  '[[]]',
  '{"":""}',
  '[null]',
  '{"type":"ref/prompt","name":{"toString":1}}',
];
const RAW_NUMBERS = ['1e400', '-1e400', '12345678901234567890', '-0', '1.0', '0.1e-400', '9007199254740993', '1E2', '-9223372036854775809', '0.0'];
const SPECIAL_STRINGS = ['', ' ', 'tools/call', MODERN, '2025-11-25', '../../etc/passwd', '\u0000', '\ud800', '\udfff\ud800', '💥', 'a'.repeat(300), '=?base64?dG9vbHM=?=', 'null', '__proto__', 'constructor', 'toString', 'http://127.0.0.1/', 'fuzz://legacy/doc', 'fuzz://modern/doc', '\r\nX-Injected: 1', 'debug', 'emergency'];

const hostile = fc.constantFrom(...HOSTILE_JSON).map((s) => JSON.parse(s) as unknown);
const strings = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom(...SPECIAL_STRINGS));
const numbers = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, -1, 1.5, 2 ** 31, 2 ** 53, Number.MAX_SAFE_INTEGER, -Number.MAX_VALUE, 1e-320));
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: strings },
  { weight: 2, arbitrary: numbers },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 3, arbitrary: hostile },
  { weight: 1, arbitrary: fc.constantFrom(...RAW_NUMBERS).map((t) => RAW + t) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }) },
);

// ---------------------------------------------------------------------------------------------------------
// The message seed: a realistic request, notification or response for the target.

const id = fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 1_000_000 }) }, { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 8 }) }, { weight: 1, arbitrary: fc.constantFrom('gatehouse-probe', 'gh-1', 'gatehouse-discover', '0', '') });
const clientInfo = fc.record({ name: fc.constantFrom('fuzz', 'claude', 'x'), version: fc.constantFrom('1', '0.0.1') });
const capabilities = fc.constantFrom({}, { roots: {} }, { sampling: {} }, { elicitation: {} }, { roots: { listChanged: true }, sampling: {}, elicitation: { form: {} } });
const uri = fc.constantFrom('fuzz://legacy/doc', 'fuzz://modern/doc', 'fuzz://legacy/7', 'fuzz://modern/x', 'file:///etc/passwd', 'nope://x', '', 'fuzz://legacy/' + 'é'.repeat(20));
const cursor = fc.constantFrom('abc', '', 'eyJ4IjoxfQ', '!!!', 'gh:0', 'a'.repeat(100));

function toolCall(target: Target): fc.Arbitrary<Record<string, unknown>> {
  const names = TOOL_NAMES[target];
  const known = fc.constantFrom(...names).chain((name) => fc.record({ name: fc.constant(name), arguments: argumentsFor(name) }));
  // A retry after an InputRequiredResult: the state the gateway signed, and answers to what it asked.
  const retry = fc.record({
    name: fc.constantFrom(...names.filter((n) => n.endsWith('fault'))),
    arguments: fc.constant({ kind: 'elicit' }),
    requestState: fc.constantFrom(STATE_TOKEN, 'forged-state', ''),
    inputResponses: fc.constantFrom<Record<string, unknown>>({ [INPUT_KEY_TOKEN]: { action: 'accept', content: { name: 'x' } } }, { [INPUT_KEY_TOKEN]: { action: 'decline' } }, { other: {} }, {}),
  });
  // A name no list gave, which one upstream on the pass-through answers itself: the policy holds for it too.
  const unknown = fc.record({ name: fc.constantFrom(...UNKNOWN_TOOLS), arguments: fc.oneof(fc.constant({}), fc.record({ url: fc.constantFrom(...EGRESS_DENIED) })) });
  if (target === 'governed') {
    // Most writes carry a key from a small pool and arguments from a small set, so the same key meets the
    // same request (a replay), another request (a conflict) and itself in flight (copies sent at once).
    const key = fc.oneof(fc.integer({ min: 1, max: IDEMPOTENCY_KEYS }), fc.integer({ min: 1_000, max: 2 ** 31 })).map((n) => ({ idempotencyKey: `fz-idem-${AUTH_TOKEN}-${n}` }));
    const write = fc.record({ name: fc.constant('add'), arguments: fc.oneof({ weight: 3, arbitrary: fc.record({ a: fc.constantFrom(1, 2), b: fc.constant(1) }) }, { weight: 1, arbitrary: argumentsFor('add') }), _meta: key }, { requiredKeys: ['name', 'arguments'] });
    return fc.oneof({ weight: 8, arbitrary: known }, { weight: 4, arbitrary: write }, { weight: 2, arbitrary: unknown }, { weight: 1, arbitrary: retry });
  }
  return fc.oneof({ weight: 12, arbitrary: known }, { weight: 2, arbitrary: unknown }, { weight: 1, arbitrary: retry });
}

function argumentsFor(publicName: string): fc.Arbitrary<Record<string, unknown>> {
  const name = publicName.replace(/^(alpha|beta)_/, '');
  switch (name) {
    case 'echo':
      return fc.record({ text: fc.oneof({ weight: 4, arbitrary: fc.string({ maxLength: 16 }) }, { weight: 1, arbitrary: anyJson }, { weight: 2, arbitrary: fc.constantFrom(...EGRESS_DENIED, ...EGRESS_ALLOWED).chain((u) => fc.constantFrom(u, `see ${u} and more`, [u])) }) });
    case 'add':
      return fc.record({ a: fc.oneof({ weight: 4, arbitrary: fc.integer() }, { weight: 1, arbitrary: anyJson }), b: fc.integer() });
    case 'query':
      return fc.record(
        { region: fc.constantFrom('eu-west', 'Zürich', ' spaced ', '', 'a,b', '=?base64?x?=', '日本'), n: fc.oneof(fc.integer({ min: -5, max: 1e6 }), fc.constantFrom(2 ** 53, 1.5)), sql: fc.constant('select 1') },
        { requiredKeys: ['region'] },
      );
    case 'fault':
      return fc.record({ kind: fc.oneof(...FAULTS) });
    case 'read_file':
      return fc.record({ path: fc.constantFrom('/etc/hosts', 'x') });
    default:
      return fc.constant({});
  }
}

function seedFor(target: Target): fc.Arbitrary<Seed> {
  const req = (method: string, params: fc.Arbitrary<Record<string, unknown> | undefined>, weight: number) => ({
    weight,
    arbitrary: fc.record({ kind: fc.constant<'request'>('request'), method: fc.constant(method), id, params }),
  });
  const note = (method: string, params: fc.Arbitrary<Record<string, unknown> | undefined>, weight: number) => ({
    weight,
    arbitrary: fc.record({ kind: fc.constant<'notification'>('notification'), method: fc.constant(method), id: fc.constant(0), params }),
  });
  const none = fc.constant(undefined);
  const empty = fc.constant({});
  return fc.oneof(
    req('tools/call', toolCall(target), 25),
    req('tools/list', fc.option(fc.record({ cursor }, { requiredKeys: [] }), { nil: undefined }), 10),
    req('initialize', fc.record({ protocolVersion: fc.constantFrom(...LEGACY_VERSIONS, MODERN, '1999-01-01'), capabilities, clientInfo }), 8),
    req('resources/read', fc.record({ uri }), 5),
    req('resources/list', fc.option(empty, { nil: undefined }), 4),
    req('resources/templates/list', empty, 2),
    req('prompts/get', fc.record({ name: fc.constantFrom(target === 'catalog' ? 'alpha_greet' : 'greet', 'beta_greet', 'nope'), arguments: fc.constant({ who: 'x' }) }), 4),
    req('prompts/list', empty, 3),
    req('completion/complete', fc.record({ ref: fc.constantFrom({ type: 'ref/prompt', name: 'greet' }, { type: 'ref/prompt', name: 'alpha_greet' }, { type: 'ref/resource', uri: 'fuzz://legacy/{id}' }, { type: 'ref/other' }), argument: fc.constant({ name: 'who', value: 'a' }) }), 3),
    req('logging/setLevel', fc.record({ level: fc.constantFrom('debug', 'info', 'error', 'loud') }), 3),
    req('ping', fc.option(empty, { nil: undefined }), 3),
    req('server/discover', empty, 4),
    req('subscriptions/listen', fc.record({ notifications: fc.constantFrom({ toolsListChanged: true }, { resourceSubscriptions: ['fuzz://legacy/doc'] }, {}) }), 2),
    req('resources/subscribe', fc.record({ uri }), 2),
    req('resources/unsubscribe', fc.record({ uri }), 1),
    req('sampling/createMessage', empty, 1),
    req('tasks/get', empty, 1),
    note('notifications/initialized', none, 3),
    note('notifications/cancelled', fc.record({ requestId: id, reason: fc.constant('user') }), 2),
    note('notifications/progress', fc.record({ progressToken: id, progress: fc.integer({ min: 0, max: 100 }) }), 1),
    note('notifications/roots/list_changed', none, 1),
    {
      weight: 3,
      arbitrary: fc.record({ kind: fc.constant<'response'>('response'), method: fc.constant(''), id, params: fc.constantFrom<Record<string, unknown> | undefined>({ result: {} }, { result: { action: 'accept', content: { name: 'x' } } }, { error: { code: -1, message: 'no' } }) }),
    },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant<'request'>('request'), method: fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('tools/CALL', 'rpc.discover', 'notifications/x', 'x/y', '')), id, params: fc.option(empty, { nil: undefined }) }) },
  );
}

// ---------------------------------------------------------------------------------------------------------
// Mutations.

/** Every field a handler might read, in every position: the message, params, `_meta`, a response. */
const FIELD_PATHS: string[][] = [
  ['jsonrpc'],
  ['id'],
  ['method'],
  ['params'],
  ['params', 'name'],
  ['params', 'uri'],
  ['params', 'arguments'],
  ['params', 'arguments', 'text'],
  ['params', 'arguments', 'region'],
  ['params', 'arguments', 'n'],
  ['params', 'arguments', 'kind'],
  ['params', 'cursor'],
  ['params', '_meta'],
  ['params', '_meta', META_VERSION],
  ['params', '_meta', META_CAPS],
  ['params', '_meta', META_INFO],
  ['params', '_meta', META_LEVEL],
  ['params', '_meta', 'progressToken'],
  ['params', '_meta', 'traceparent'],
  ['params', '_meta', 'io.modelcontextprotocol/subscriptionId'],
  ['params', '_meta', 'dev.gatehouse/tool_ref'],
  ['params', 'protocolVersion'],
  ['params', 'capabilities'],
  ['params', 'clientInfo'],
  ['params', 'level'],
  ['params', 'ref'],
  ['params', 'ref', 'name'],
  ['params', 'ref', 'uri'],
  ['params', 'argument'],
  ['params', 'context'],
  ['params', 'requestState'],
  ['params', 'inputResponses'],
  ['params', 'notifications'],
  ['params', 'notifications', 'resourceSubscriptions'],
  ['params', 'notifications', 'toolsListChanged'],
  ['params', 'inputResponses', 'who'],
  ['params', 'ref', 'type'],
  ['params', 'argument', 'name'],
  ['params', 'argument', 'value'],
  ['params', 'context', 'arguments'],
  ['params', 'capabilities', 'elicitation'],
  ['params', 'clientInfo', 'name'],
  ['params', '_meta', META_CAPS, 'elicitation'],
  ['params', '_meta', META_INFO, 'name'],
  ['result', 'content'],
  ['result', 'action'],
  ['error', 'data'],
  ['params', 'requestId'],
  ['params', 'progressToken'],
  ['params', 'progress'],
  ['params', '__proto__'],
  ['params', 'toString'],
  ['result'],
  ['error'],
  ['error', 'code'],
  ['error', 'message'],
  ['__proto__'],
  ['constructor'],
];

const fieldOp: fc.Arbitrary<FieldOp> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ path: fc.constantFrom(...FIELD_PATHS), value: anyJson }) },
  { weight: 1, arbitrary: fc.record({ path: fc.constantFrom(...FIELD_PATHS), delete: fc.constant<true>(true) }) },
);

/** Headers worth mutating, with values that matter for each; {TOKENS} are filled in at render time. */
const HEADER_VALUES: Record<string, string[]> = {
  host: ['127.0.0.1:{PORT}', 'localhost:{PORT}', '[::1]:{PORT}', 'evil.example', '127.0.0.1', '', '127.0.0.1:{PORT}.evil.example', 'LOCALHOST:{PORT}', '127.0.0.1:1'],
  origin: ['http://127.0.0.1:{PORT}', 'http://localhost:{PORT}', 'http://evil.example', 'null', 'file://', 'http://127.0.0.1:{PORT}.evil.example', 'not a url', ''],
  'content-type': ['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'text/plain', 'application/json-rpc', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '', 'application/json;', ';', 'application/jsonx', 'application/json, text/plain'],
  accept: ['application/json, text/event-stream', 'text/event-stream, application/json', '*/*', 'application/*, text/*', 'application/json', 'text/event-stream', 'text/html', '', 'application/json;q=0, text/event-stream;q=0', ',,,'],
  authorization: ['Bearer {KEY_A}', 'Bearer {KEY_B}', 'Bearer', 'Bearer  {KEY_A}', 'bearer {KEY_A}', 'BEARER {KEY_A}', 'Basic YTpi', 'Bearer garbage', 'Bearer {KEY_A} extra', 'Token {KEY_A}', '', 'Bearer {KEY_EXPIRED}', 'Bearer gh_' + 'x'.repeat(43), 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.'],
  'mcp-protocol-version': [MODERN, ...LEGACY_VERSIONS, '2099-01-01', `${MODERN}, 2025-11-25`, '', ` ${MODERN}`, 'garbage', '2026-07-28é', 'DRAFT-2026-v1'],
  'mcp-method': ['tools/call', 'tools/list', 'initialize', 'server/discover', '', 'TOOLS/CALL', 'x'],
  'mcp-name': ['echo', 'query', 'beta_query', '=?base64?ZWNobw==?=', '=?base64?!!!?=', '=?base64?/w==?=', '=?base64??=', '=?base64?ZWNobw?=', 'ñ', '', 'echo\t'],
  'mcp-session-id': ['{SESSION}', 'made-up-session', '', 'lg-1-x', 'probe-session', 'ü', '{SESSION}x', 'a'.repeat(300)],
  'mcp-param-region': ['eu-west', '=?base64?WsO8cmljaA==?=', '', 'us-east', '=?base64?###?='],
  'mcp-param-n': ['1', '01', '1.0', '-0', 'NaN', '9007199254740993', ''],
  traceparent: ['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', '00-00000000000000000000000000000000-0000000000000000-01', 'garbage', ''],
  tracestate: ['a=b', 'x'.repeat(600), '=,=', ''],
  'last-event-id': ['1', '', 'evt-999', '\u00ff'],
  'x-forwarded-for': ['10.1.2.3', '10.0.0.1, 127.0.0.1', 'garbage', '::1', '2001:db8::1', '10.9.9.9', '127.0.0.1', ''],
  'content-length': ['0', '5', '-1', 'abc', '99999999999999', '1, 1'],
  'transfer-encoding': ['chunked', 'gzip', 'chunked, identity', 'identity'],
  expect: ['100-continue', 'nothing'],
  cookie: ['session=abc'],
  upgrade: ['websocket', 'h2c'],
};
const HEADER_NAMES = Object.keys(HEADER_VALUES);
/** Bytes a header value may not carry, and long values: Node's own parser answers these. */
const WILD_VALUES = ['\u0001', 'x\u007fy', 'é', 'a'.repeat(20_000), 'line\rbreak'];

const headerValue = (name: string): fc.Arbitrary<string> =>
  fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...HEADER_VALUES[name]!) }, { weight: 1, arbitrary: fc.string({ maxLength: 16 }) }, { weight: 1, arbitrary: fc.constantFrom(...WILD_VALUES) });

const headerOp: fc.Arbitrary<HeaderOp> = fc.constantFrom(...HEADER_NAMES).chain((name) =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant<HeaderOp>({ op: 'drop', name }) },
    { weight: 4, arbitrary: headerValue(name).map((value): HeaderOp => ({ op: 'set', name, value })) },
    { weight: 3, arbitrary: fc.option(headerValue(name), { nil: undefined }).map((value): HeaderOp => (value === undefined ? { op: 'dup', name } : { op: 'dup', name, value })) },
    { weight: 1, arbitrary: fc.constant<HeaderOp>({ op: 'case', name }) },
    { weight: 1, arbitrary: fc.constant<HeaderOp>({ op: 'pad', name }) },
  ),
);
const randomHeader: fc.Arbitrary<HeaderOp> = fc
  .record({ name: fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/), value: fc.string({ maxLength: 20 }) })
  .map(({ name, value }): HeaderOp => ({ op: 'set', name: `x-${name}`, value }));

const INVALID_UTF8 = [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80]];

// The first alternative of each choice is the well-formed one, and cross-shrinking lets a counterexample
// fall back to it: a shrunk case keeps only the mutations that matter.
const CROSS = { withCrossShrink: true };

const bodyPlan: fc.Arbitrary<BodyPlan> = fc.oneof(
  CROSS,
  { weight: 220, arbitrary: fc.constant<BodyPlan>({ kind: 'json' }) },
  { weight: 2, arbitrary: fc.constant<BodyPlan>({ kind: 'pretty' }) },
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b): BodyPlan => ({ kind: 'raw', bytes: [...b] })) },
  { weight: 4, arbitrary: fc.constantFrom(...INVALID_UTF8).map((seq): BodyPlan => ({ kind: 'invalid-utf8', seq })) },
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 400 }).map((keep): BodyPlan => ({ kind: 'truncate', keep })) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant<'deep'>('deep'),
      depth: fc.oneof(fc.integer({ min: 55, max: 75 }), fc.integer({ min: 1, max: 30_000 })),
      open: fc.constantFrom<'[' | '{' | 'mixed'>('[', '{', 'mixed'),
      where: fc.constantFrom<'params' | 'top' | 'string'>('params', 'top', 'string'),
    }),
  },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 3 }).map((count): BodyPlan => ({ kind: 'batch', count })) },
  { weight: 2, arbitrary: fc.constant<BodyPlan>({ kind: 'empty' }) },
  { weight: 2, arbitrary: fc.constantFrom('null', '1', '"x"', 'true', '[]', '{}', '{"jsonrpc":"2.0"}', ' ', '{"jsonrpc":"2.0","method":"tools/list","id":1}garbage', '\u0000').map((text): BodyPlan => ({ kind: 'literal', text })) },
  { weight: 2, arbitrary: fc.integer({ min: -64, max: 64 }).map((delta): BodyPlan => ({ kind: 'huge', delta })) },
  { weight: 1, arbitrary: fc.constant<BodyPlan>({ kind: 'bom' }) },
  // `first`: the other value comes before the message's own, which JSON.parse (keeping the last) then reads:
  // the shape that would have Gatehouse check one message while a parser keeping the first reads another.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant<'dupkey'>('dupkey'), key: fc.constantFrom('method', 'id', 'jsonrpc', 'params'), value: anyJson, first: fc.boolean() }) },
);

/** Slow framings (a body shorter than its Content-Length waits for the body timeout) are rare. */
const framing: fc.Arbitrary<Framing> = fc.oneof(
  CROSS,
  { weight: 400, arbitrary: fc.constant<Framing>('cl') },
  { weight: 16, arbitrary: fc.constant<Framing>('chunked') },
  { weight: 6, arbitrary: fc.constant<Framing>('none') },
  { weight: 6, arbitrary: fc.constant<Framing>('cl-short') },
  { weight: 6, arbitrary: fc.constant<Framing>('cl+te') },
  { weight: 2, arbitrary: fc.constant<Framing>('cl-long') },
);

const httpMethod = fc.oneof(
  CROSS,
  { weight: 85, arbitrary: fc.constant('POST') },
  { weight: 6, arbitrary: fc.constant('GET') },
  { weight: 5, arbitrary: fc.constant('DELETE') },
  { weight: 4, arbitrary: fc.constantFrom('PUT', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'post', 'PROPFIND', 'CONNECT') },
);

const path = fc.oneof(
  CROSS,
  { weight: 95, arbitrary: fc.constant('/mcp') },
  {
    weight: 5,
    arbitrary: fc.constantFrom('/mcp?x=1', '/mcp?access_token={KEY_A}', '/mcp?api_key=garbage', '/mcp/', '/MCP', '//mcp', '/mcp%2f', '/mcp#frag', '/healthz', '/readyz', '/health', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server', '/nope', '*', 'http://127.0.0.1:{PORT}/mcp', '/mcp?' + 'q'.repeat(3000), '/mcp?token=x&token=y'),
  },
);

const auth = fc.oneof(
  CROSS,
  { weight: 75, arbitrary: fc.constant<CasePlan['auth']>('A') },
  { weight: 4, arbitrary: fc.constant<CasePlan['auth']>('B') },
  { weight: 4, arbitrary: fc.constant<CasePlan['auth']>('LIMITED') },
  { weight: 6, arbitrary: fc.constantFrom<CasePlan['auth']>('NOSCOPE', 'EXPIRED', 'DISABLED', 'none', 'garbage', 'query', 'body') },
);

/** A legacy client normally names the session it was issued; a modern one sends none (it would be ignored). */
const legacySession = fc.oneof(
  CROSS,
  { weight: 55, arbitrary: fc.constant<SessionKind>('fresh') },
  { weight: 15, arbitrary: fc.constant<SessionKind>('none') },
  { weight: 15, arbitrary: fc.constant<SessionKind>('pool') },
  { weight: 15, arbitrary: fc.constantFrom<SessionKind>('fresh-other', 'fresh-deleted', 'madeup') },
);
const modernSession = fc.oneof(CROSS, { weight: 85, arbitrary: fc.constant<SessionKind>('none') }, { weight: 15, arbitrary: fc.constantFrom<SessionKind>('fresh', 'pool', 'madeup') });

const era = fc.oneof(
  { weight: 45, arbitrary: fc.constant(MODERN) },
  { weight: 25, arbitrary: fc.constant('2025-11-25') },
  { weight: 15, arbitrary: fc.constantFrom('2025-06-18', '2025-03-26', '2024-11-05') },
  { weight: 8, arbitrary: fc.constant('legacy-none') },
);

/** Client addresses as a trusted proxy reports them: mostly distinct, a few shared so a lock-out happens. */
const xff = fc.oneof(
  CROSS,
  { weight: 6, arbitrary: fc.tuple(fc.nat(255), fc.nat(255)).map(([a, b]) => `10.20.${a}.${b}`) },
  { weight: 2, arbitrary: fc.constant('10.9.9.9') },
  { weight: 1, arbitrary: fc.constant(null) },
);

/** The gateways cases go to; FUZZ_TARGETS=catalog,modern narrows a run to some of them. */
function targets(): Target[] {
  const wanted = (process.env.FUZZ_TARGETS ?? '').split(',').filter((t): t is Target => (TARGETS as readonly string[]).includes(t));
  return wanted.length > 0 ? wanted : [...TARGETS];
}

export function caseArb(): fc.Arbitrary<CasePlan> {
  return fc.constantFrom(...targets()).chain((target) =>
    fc.record({
      target: fc.constant(target),
      http: httpMethod,
      path,
      eraSession: era.chain((e) => fc.record({ era: fc.constant(e), session: e === MODERN ? modernSession : legacySession })),
      auth,
      xff,
      trace: fc.boolean(),
      declares: fc.boolean(),
      mrtr: fc.constantFrom<CasePlan['mrtr']>('accept', 'none', 'decline', 'wrong-key', 'tampered', 'twice'),
      seed: seedFor(target),
      fieldOps: fc.oneof(CROSS, { weight: 4, arbitrary: fc.constant<FieldOp[]>([]) }, { weight: 1, arbitrary: fc.array(fieldOp, { minLength: 1, maxLength: 3 }) }),
      body: bodyPlan,
      bodyOnAnyMethod: fc.oneof(CROSS, { weight: 19, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      headerOps: fc.oneof(
        CROSS,
        { weight: 4, arbitrary: fc.constant<HeaderOp[]>([]) },
        { weight: 1, arbitrary: fc.array(fc.oneof({ weight: 5, arbitrary: headerOp }, { weight: 1, arbitrary: randomHeader }), { minLength: 1, maxLength: 3 }) },
      ),
      framing,
      parallel: fc.oneof(CROSS, { weight: 30, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constantFrom(2, 4) }),
      abortAfterMs: fc.oneof(CROSS, { weight: 40, arbitrary: fc.constant<number | null>(null) }, { weight: 1, arbitrary: fc.constantFrom<number | null>(0, 2, 20) }),
    }).map(({ eraSession, ...rest }): CasePlan => ({ ...rest, ...eraSession })),
  );
}

/** The retry of an InputRequiredResult: the same call with the signed state and answers keyed as asked. */
export function retryPlan(plan: CasePlan): CasePlan {
  const answer = plan.mrtr === 'decline' ? { action: 'decline' } : { action: 'accept', content: { name: 'x' } };
  const key = plan.mrtr === 'wrong-key' ? 'not-asked' : INPUT_KEY_TOKEN;
  const params = { ...(plan.seed.params ?? {}), requestState: STATE_TOKEN, inputResponses: { [key]: answer } };
  return { ...plan, seed: { ...plan.seed, params }, parallel: 1, abortAfterMs: null };
}

// ---------------------------------------------------------------------------------------------------------
// Rendering.

export interface Rendered {
  bytes: Buffer;
  /** The JSON-RPC message before it became a body (undefined when the body is not one). */
  message: Record<string, unknown> | undefined;
  head: boolean;
  /** The request as text, non-printable bytes escaped, for reports. */
  transcript: string;
}

export function render(plan: CasePlan, ctx: RenderContext): Rendered {
  const fill = (s: string): string =>
    s
      .replaceAll('{PORT}', String(ctx.port))
      .replaceAll('{SESSION}', ctx.session)
      .replaceAll('{MARK}', ctx.marker)
      .replace(/\{KEY_([A-Z]+)\}/g, (_, k: string) => ctx.keys[k as KeyName] ?? `{KEY_${k}}`);
  const modern = plan.era === MODERN;
  const message = buildMessage(plan);
  const bodyText = bodyBytes(plan, message, ctx);
  const sendsBody = ['POST', 'PUT', 'PATCH', 'post', 'PROPFIND'].includes(plan.http) || plan.bodyOnAnyMethod;
  const body = sendsBody ? bodyText : Buffer.alloc(0);

  const headers: Array<[string, string]> = [['host', '127.0.0.1:{PORT}']];
  if (sendsBody) headers.push(['content-type', 'application/json']);
  headers.push(['accept', plan.http === 'GET' ? 'text/event-stream' : 'application/json, text/event-stream']);
  const authHeader: Partial<Record<CasePlan['auth'], string>> = { A: 'Bearer {KEY_A}', B: 'Bearer {KEY_B}', NOSCOPE: 'Bearer {KEY_NOSCOPE}', EXPIRED: 'Bearer {KEY_EXPIRED}', DISABLED: 'Bearer {KEY_DISABLED}', LIMITED: 'Bearer {KEY_LIMITED}', garbage: 'Bearer not-a-key-0123456789', query: 'Bearer {KEY_A}', body: 'Bearer {KEY_A}' };
  if (authHeader[plan.auth] !== undefined) headers.push(['authorization', authHeader[plan.auth]!]);
  const method = typeof message?.method === 'string' ? message.method : plan.seed.method;
  if (modern) {
    headers.push(['mcp-protocol-version', MODERN]);
    if (plan.seed.kind !== 'response') headers.push(['mcp-method', method]);
    const params = (message?.params ?? {}) as Record<string, unknown>;
    const mirrored = method === 'resources/read' ? params.uri : method === 'tools/call' || method === 'prompts/get' ? params.name : undefined;
    const seedName = method === 'resources/read' ? plan.seed.params?.uri : plan.seed.params?.name;
    const name = typeof mirrored === 'string' ? mirrored : seedName;
    if (typeof name === 'string') headers.push(['mcp-name', encodeHeaderValue(name)]);
    const args = params.arguments as Record<string, unknown> | undefined;
    if (method === 'tools/call' && /query$/.test(textOf(name)) && args && typeof args === 'object') {
      // The fuzzer's own hostile values must not trip it: `String({"toString":"x","valueOf":1})` throws.
      if (args.region !== undefined) headers.push(['mcp-param-region', encodeHeaderValue(textOf(args.region))]);
      if (args.n !== undefined) headers.push(['mcp-param-n', textOf(args.n)]);
    }
  } else if (plan.era !== 'legacy-none' && method !== 'initialize') {
    headers.push(['mcp-protocol-version', plan.era]);
  }
  if (plan.session !== 'none') headers.push(['mcp-session-id', '{SESSION}']);
  if (plan.xff !== null) headers.push(['x-forwarded-for', plan.xff]);
  if (plan.trace) headers.push(['traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01']);
  let bodyOut = body;
  switch (plan.framing) {
    case 'cl':
      if (sendsBody) headers.push(['content-length', String(body.length)]);
      break;
    case 'chunked':
    case 'cl+te':
      if (plan.framing === 'cl+te') headers.push(['content-length', String(body.length)]);
      headers.push(['transfer-encoding', 'chunked']);
      bodyOut = chunk(body);
      break;
    case 'none':
      break;
    case 'cl-short':
      headers.push(['content-length', String(Math.max(0, body.length - 3))]);
      break;
    case 'cl-long':
      headers.push(['content-length', String(body.length + 5)]);
      break;
  }
  for (const op of plan.headerOps) applyHeaderOp(headers, op);
  const target = plan.auth === 'query' ? `${plan.path}${plan.path.includes('?') ? '&' : '?'}access_token={KEY_A}` : plan.path;
  const lines = [`${plan.http} ${fill(target)} HTTP/1.1`, ...headers.map(([n, v]) => `${n}: ${fill(v)}`), 'connection: close', '', ''];
  const head = Buffer.from(lines.join('\r\n'), 'utf8');
  const bytes = Buffer.concat([head, bodyOut]);
  return { bytes, message, head: plan.http === 'HEAD', transcript: printable(bytes) };
}

function buildMessage(plan: CasePlan): Record<string, unknown> | undefined {
  const s = plan.seed;
  const msg: Record<string, unknown> = { jsonrpc: '2.0' };
  if (s.kind === 'response') {
    msg.id = s.id;
    Object.assign(msg, clone(s.params ?? {}));
  } else {
    if (s.kind === 'request') msg.id = s.id;
    msg.method = s.method;
    let params = s.params === undefined ? undefined : (clone(s.params) as Record<string, unknown>);
    if (plan.era === MODERN && s.kind === 'request') {
      params ??= {};
      const meta: Record<string, unknown> = { [META_VERSION]: MODERN, [META_CAPS]: plan.declares ? { elicitation: { form: {} }, sampling: {}, roots: {} } : {} };
      if (s.id.toString().length % 2 === 0) meta[META_INFO] = { name: 'fuzz', version: '1' };
      params._meta = { ...(isObject(params._meta) ? params._meta : {}), ...meta };
    }
    if (params !== undefined) {
      params.fuzzMark = '{MARK}';
      msg.params = params;
    }
  }
  if (plan.auth === 'body') msg.token = '{KEY_A}';
  msg.fuzz = '{MARK}';
  for (const op of plan.fieldOps) applyFieldOp(msg, op);
  return msg;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/** Sets or deletes at a path, creating objects on the way; own properties even for `__proto__`. */
function applyFieldOp(root: Record<string, unknown>, op: FieldOp): void {
  let at: Record<string, unknown> = root;
  for (const key of op.path.slice(0, -1)) {
    const next = Object.prototype.hasOwnProperty.call(at, key) ? at[key] : undefined;
    if (next === null || typeof next !== 'object' || Array.isArray(next)) {
      const fresh: Record<string, unknown> = {};
      Object.defineProperty(at, key, { value: fresh, enumerable: true, writable: true, configurable: true });
      at = fresh;
    } else at = next as Record<string, unknown>;
  }
  const last = op.path[op.path.length - 1]!;
  if ('delete' in op) delete at[last];
  else Object.defineProperty(at, last, { value: clone(op.value), enumerable: true, writable: true, configurable: true });
}

function serialize(v: unknown, space?: string): string {
  return JSON.stringify(v, null, space).replace(/"\\u0000RAW:([^"]*)"/g, '$1');
}

function bodyBytes(plan: CasePlan, message: Record<string, unknown> | undefined, ctx: RenderContext): Buffer {
  const fillBody = (s: string): string => s.replaceAll('{MARK}', ctx.marker).replaceAll(AUTH_TOKEN, plan.auth).replaceAll(STATE_TOKEN, JSON.stringify(ctx.state).slice(1, -1)).replaceAll(INPUT_KEY_TOKEN, JSON.stringify(ctx.inputKey).slice(1, -1)).replace(/\{KEY_([A-Z]+)\}/g, (_, k: string) => ctx.keys[k as KeyName] ?? '');
  const json = fillBody(serialize(message));
  const mark = `"${ctx.marker}"`;
  const b = plan.body;
  switch (b.kind) {
    case 'json':
      return Buffer.from(json);
    case 'pretty':
      return Buffer.from(fillBody(serialize(message, '\t')).replace(/\n/g, '\r\n'));
    case 'raw':
      return Buffer.concat([Buffer.from(b.bytes), Buffer.from(mark)]);
    case 'invalid-utf8': {
      // Inside a string value, so everything but the encoding is well-formed JSON.
      const at = json.indexOf(ctx.marker) + ctx.marker.length;
      return Buffer.concat([Buffer.from(json.slice(0, at)), Buffer.from(b.seq), Buffer.from(json.slice(at))]);
    }
    case 'truncate': {
      // The marker first, so whatever is kept carries it.
      const text = `{"fuzz":${mark},` + json.slice(1);
      return Buffer.from(text.slice(0, Math.min(text.length - 1, mark.length + 9 + b.keep)));
    }
    case 'deep': {
      const opens = Array.from({ length: b.depth }, (_, i) => (b.open === '[' || (b.open === 'mixed' && i % 2 === 0) ? '[' : '{"k":'));
      const closes = opens.map((o) => (o === '[' ? ']' : '}')).reverse();
      const nest = `${opens.join('')}${mark}${closes.join('')}`;
      if (b.where === 'top') return Buffer.from(nest);
      // Brackets inside a string are not nesting; escaped quotes must not end the string early.
      if (b.where === 'string') return Buffer.from(json.replace(mark, JSON.stringify(`${'[\\"{'.repeat(Math.min(b.depth, 5000))}${ctx.marker}`)));
      return Buffer.from(json.replace(mark, nest));
    }
    case 'batch':
      return Buffer.from(`[${Array.from({ length: b.count }, () => json).join(',')}]`);
    case 'empty':
      return Buffer.alloc(0);
    case 'literal':
      // A marker after the JSON text keeps it detectable upstream without making it JSON.
      return Buffer.from(`${b.text}${b.text.endsWith('garbage') ? mark : ''}`);
    case 'huge': {
      // Around listen.maxBodyBytes: just under stays valid JSON and is forwarded, just over is refused.
      const pad = Math.max(0, ctx.maxBodyBytes + b.delta - Buffer.byteLength(json));
      return Buffer.from(json.replace(mark, JSON.stringify(ctx.marker + 'p'.repeat(Math.max(0, pad)))));
    }
    case 'bom':
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(json)]);
    case 'dupkey':
      if (b.first === true) return Buffer.from(`{${JSON.stringify(b.key)}:${fillBody(serialize(b.value))},${json.slice(1)}`);
      return Buffer.from(json.replace(/}$/, `,${JSON.stringify(b.key)}:${fillBody(serialize(b.value))}}`));
  }
}

function chunk(body: Buffer): Buffer {
  if (body.length === 0) return Buffer.from('0\r\n\r\n');
  const half = Math.ceil(body.length / 2);
  const parts = [body.subarray(0, half), body.subarray(half)].filter((p) => p.length > 0);
  return Buffer.concat([...parts.flatMap((p) => [Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from('\r\n')]), Buffer.from('0\r\n\r\n')]);
}

function applyHeaderOp(headers: Array<[string, string]>, op: HeaderOp): void {
  const i = headers.findIndex(([n]) => n.toLowerCase() === op.name);
  switch (op.op) {
    case 'drop':
      if (i !== -1) headers.splice(i, 1);
      return;
    case 'set':
      if (i === -1) headers.push([op.name, op.value]);
      else headers[i] = [headers[i]![0], op.value];
      return;
    case 'dup':
      headers.push([op.name, op.value ?? (i === -1 ? '' : headers[i]![1])]);
      return;
    case 'case':
      if (i !== -1) headers[i] = [headers[i]![0].replace(/[a-z]/g, (c, k: number) => (k % 2 ? c.toUpperCase() : c)), headers[i]![1]];
      return;
    case 'pad':
      if (i !== -1) headers[i] = [headers[i]![0], ` \t${headers[i]![1]}\t `];
      return;
  }
}

function textOf(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? 'undefined');
}

/** 2026-07-28 streamable-http §Value Encoding: plain visible ASCII, else the base64 sentinel. */
export function encodeHeaderValue(value: string): string {
  const plain = /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) || value === '';
  return plain && !value.startsWith('=?base64?') ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

export function printable(bytes: Buffer, max = 3000): string {
  const text = bytes.subarray(0, max).toString('latin1').replace(/[^\x20-\x7e\r\n]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return bytes.length > max ? `${text}… (${bytes.length} bytes)` : text;
}
