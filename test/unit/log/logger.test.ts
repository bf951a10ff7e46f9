// The logger's contract: one JSON object per line with time/level/msg, level filtering, child fields, and
// every redaction path (credential-named fields, credential-shaped text, configured secret values), plus
// collectSecrets() picking the secret values out of a validated config.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { validateConfigObject } from '../../../src/config/load.js';
import type { LogLevel } from '../../../src/config/types.js';
import { batchedWriter, createLogger, isoTime, knownNames, mayHoldSecrets, nameJson, redactText, REDACTED, type LoggerOptions } from '../../../src/log/logger.js';
import { collectSecrets } from '../../../src/config/secrets.js';

const execFileAsync = promisify(execFile);

type Line = Record<string, unknown>;

function capture(level: LogLevel = 'debug', base: Record<string, unknown> = {}, opts: LoggerOptions = {}) {
  const raw: string[] = [];
  const log = createLogger(level, (l) => raw.push(l), base, opts);
  return { log, raw, lines: (): Line[] => raw.map((l) => JSON.parse(l) as Line) };
}

// A JWT-shaped string (header.payload.signature); its content does not matter to the redactor.
const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWJ5dGVz';
const GH_KEY = 'gh_live_0123456789abcdefghijABCDEFGHIJ';

test('one JSON object per line: ISO time, level label, msg, then the fields, written synchronously', () => {
  const { log, raw, lines } = capture('info');
  log.info('hello', { n: 1, ok: true });
  assert.equal(raw.length, 1, 'written before info() returned');
  assert.ok(raw[0]!.endsWith('}\n') && !raw[0]!.slice(0, -1).includes('\n'));
  const [line] = lines();
  assert.equal(line!.level, 'info');
  assert.equal(line!.msg, 'hello');
  assert.equal(line!.n, 1);
  assert.equal(line!.ok, true);
  assert.match(String(line!.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.deepEqual(Object.keys(line!).sort(), ['level', 'msg', 'n', 'ok', 'time']);
  // Operators (and tests) grep for `"msg":"...","field"`: the message precedes its fields.
  assert.match(raw[0]!, /"msg":"hello","n":1,"ok":true\}/);
});

test('levels below the configured one are dropped, and enabled() agrees', () => {
  const { log, lines } = capture('warn');
  log.debug('d');
  log.info('i');
  log.warn('w');
  log.error('e');
  assert.deepEqual(lines().map((l) => [l.level, l.msg]), [['warn', 'w'], ['error', 'e']]);
  assert.equal(log.enabled('info'), false);
  assert.equal(log.enabled('warn'), true);
  assert.equal(log.enabled('error'), true);
  const all = capture('debug');
  all.log.debug('d');
  assert.equal(all.lines()[0]!.level, 'debug');
  assert.equal(all.log.enabled('debug'), true);
});

test('base and child fields appear on every line; call fields win over bound ones', () => {
  const { log, lines } = capture('info', { service: 'gatehouse' });
  const child = log.child({ upstream: 'github' });
  const grandchild = child.child({ session: 'abcd1234' });
  grandchild.info('relayed', { outcome: 'ok' });
  child.info('override', { upstream: 'other' });
  log.info('root');
  const [a, b, c] = lines();
  assert.deepEqual({ ...a, time: 0 }, { time: 0, level: 'info', msg: 'relayed', service: 'gatehouse', upstream: 'github', session: 'abcd1234', outcome: 'ok' });
  assert.equal(b!.upstream, 'other');
  assert.equal(c!.upstream, undefined);
  assert.equal(c!.service, 'gatehouse');
  // The child inherits the level.
  const quiet = capture('error');
  quiet.log.child({ a: 1 }).info('dropped');
  assert.equal(quiet.raw.length, 0);
});

test('errors keep name, message and code (no stack), wherever they sit', () => {
  const { log, lines } = capture();
  const err = Object.assign(new TypeError('upstream went away'), { code: 'ECONNRESET' });
  log.error('failed', { err, nested: { cause: new RangeError('too big') }, list: [new Error('first')] });
  const [line] = lines();
  assert.deepEqual(line!.err, { name: 'TypeError', message: 'upstream went away', code: 'ECONNRESET' });
  assert.deepEqual(line!.nested, { cause: { name: 'RangeError', message: 'too big' } });
  assert.deepEqual(line!.list, [{ name: 'Error', message: 'first' }]);
  assert.doesNotMatch(JSON.stringify(line), /stack|at .*\.ts:/);
});

test('values with toJSON, cycles and undefined serialize without throwing', () => {
  const { log, lines } = capture();
  const loop: Record<string, unknown> = { name: 'loop' };
  loop.self = loop;
  log.info('odd values', { when: new Date(0), url: new URL('https://example.com/a'), loop, gone: undefined });
  const [line] = lines();
  assert.equal(line!.when, '1970-01-01T00:00:00.000Z');
  assert.equal(line!.url, 'https://example.com/a');
  assert.deepEqual(line!.loop, { name: 'loop', self: '[circular]' });
  assert.equal('gone' in line!, false);
});

test('fields named like credentials are redacted at any depth, in base and child fields too; keyId/tokenId stay', () => {
  const { log, raw, lines } = capture('info', { password: 'base-password-value' });
  log.child({ apiKey: 'child-api-key-value' }).info('request', {
    headers: { Authorization: 'Basic dXNlcjpwYXNz', cookie: 'sid=cookie-value', 'x-api-key': 'header-key-value', accept: 'application/json' },
    client_secret: 'client-secret-value',
    credentials: { user: 'u', pass: 'p' },
    refresh_token: 'refresh-token-value',
    keyId: 'key-7',
    tokenId: 'tok-9',
  });
  const [line] = lines();
  const headers = line!.headers as Record<string, unknown>;
  assert.equal(line!.password, REDACTED);
  assert.equal(line!.apiKey, REDACTED);
  assert.equal(headers.Authorization, REDACTED);
  assert.equal(headers.cookie, REDACTED);
  assert.equal(headers['x-api-key'], REDACTED);
  assert.equal(headers.accept, 'application/json');
  assert.equal(line!.client_secret, REDACTED);
  assert.equal(line!.credentials, REDACTED);
  assert.equal(line!.refresh_token, REDACTED);
  assert.equal(line!.keyId, 'key-7');
  assert.equal(line!.tokenId, 'tok-9');
  for (const secret of ['base-password-value', 'child-api-key-value', 'dXNlcjpwYXNz', 'cookie-value', 'header-key-value', 'client-secret-value', 'refresh-token-value']) {
    assert.ok(!raw[0]!.includes(secret), `${secret} leaked: ${raw[0]}`);
  }
});

test('fields whose names end in a credential word are redacted too; names that only start with one, and MCP progress tokens, stay', () => {
  const { log, raw, lines } = capture();
  log.info('call', {
    githubToken: 'github-token-value',
    db_password: 'db-password-value',
    'X-Auth-Token': 'auth-token-value',
    sessionSecret: 'session-secret-value',
    privateKey: 'private-key-value',
    upstreamCredentials: { user: 'u', pass: 'upstream-pass-value' },
    tokenEndpoint: 'https://as.example.com/token',
    maxTokens: 512,
    keyword: 'weather',
    progressToken: 'progress-7',
  });
  const [line] = lines();
  for (const name of ['githubToken', 'db_password', 'X-Auth-Token', 'sessionSecret', 'privateKey', 'upstreamCredentials']) assert.equal(line![name], REDACTED, name);
  assert.equal(line!.tokenEndpoint, 'https://as.example.com/token');
  assert.equal(line!.maxTokens, 512);
  assert.equal(line!.keyword, 'weather');
  assert.equal(line!.progressToken, 'progress-7');
  for (const secret of ['github-token-value', 'db-password-value', 'auth-token-value', 'session-secret-value', 'private-key-value', 'upstream-pass-value']) {
    assert.ok(!raw[0]!.includes(secret), `${secret} leaked: ${raw[0]}`);
  }
});

test('credential-shaped text is scrubbed from messages, field values and error messages', () => {
  const { log, raw, lines } = capture();
  log.warn(`upstream answered 401 to Bearer ${'abc.DEF-123_~+/'}==`, { detail: `key ${GH_KEY} rejected` });
  log.error('token check failed', { err: new Error(`bad signature on ${JWT}`), tokens: [JWT] });
  const [a, b] = lines();
  assert.equal(a!.msg, `upstream answered 401 to Bearer ${REDACTED}`);
  assert.equal(a!.detail, `key ${REDACTED} rejected`);
  assert.deepEqual(b!.err, { name: 'Error', message: `bad signature on ${REDACTED}` });
  assert.deepEqual(b!.tokens, [REDACTED]);
  const out = raw.join('');
  for (const secret of ['abc.DEF-123', GH_KEY, JWT, 'c2lnbmF0dXJlLWJ5dGVz']) assert.ok(!out.includes(secret), `${secret} leaked: ${out}`);
});

test('redactText on its own: bearer keeps its scheme, JWT and gh_ keys vanish, ordinary text stays', () => {
  assert.equal(redactText('Authorization: bearer xyz789'), `Authorization: bearer ${REDACTED}`);
  assert.equal(redactText(`jwt=${JWT}; rest`), `jwt=${REDACTED}; rest`);
  assert.equal(redactText(`${GH_KEY} and gh_short`), `${REDACTED} and gh_short`);
  assert.equal(redactText('nothing to hide here: eyJ alone'), 'nothing to hide here: eyJ alone');
});

test('registered secret values are scrubbed from every string, bound fields and keys included, without breaking JSON', () => {
  const secret = 'hunter2-s3cr3t';
  const quoted = 'pa"ss\\word\nline';
  const { log, raw, lines } = capture('info', {}, { secrets: [secret, quoted, '', 'short'] });
  // A child bound before another secret is registered is still covered: scrubbing happens on the finished line.
  const early = log.child({ upstreamUrl: 'https://user:late-added-secret@example.com/mcp' });
  log.addSecrets(['late-added-secret']);
  log.info(`connect with ${secret}`, { header: `X-Token ${secret}`, quoted: `<${quoted}>`, [secret]: 1, port: 123456, flag: true });
  early.info('bound');
  // A number or `true` that happens to equal a secret is not a string; the line stays valid JSON.
  const numbers = capture('info', {}, { secrets: ['123456', 'true-ish'] });
  numbers.log.info('n', { port: 123456, text: 'port 123456', flag: true });
  const [a, b] = lines();
  assert.equal(a!.msg, `connect with ${REDACTED}`);
  assert.equal(a!.header, `X-Token ${REDACTED}`);
  assert.equal(a!.quoted, `<${REDACTED}>`);
  assert.equal(a![REDACTED], 1);
  assert.equal(a!.port, 123456);
  assert.equal(b!.upstreamUrl, `https://user:${REDACTED}@example.com/mcp`);
  const [n] = numbers.lines();
  assert.equal(n!.port, 123456);
  assert.equal(n!.text, `port ${REDACTED}`);
  assert.equal(n!.flag, true);
  const out = raw.join('');
  for (const s of [secret, 'late-added-secret', JSON.stringify(quoted).slice(1, -1)]) assert.ok(!out.includes(s), `${s} leaked: ${out}`);
  // Values too short to be credentials are not registered (they would mangle ordinary words).
  log.info('a short word and an empty one');
  assert.equal(lines()[2]!.msg, 'a short word and an empty one');
});

test('a secret is not matched inside an escape sequence, but is after an escaped backslash', () => {
  const { log, raw, lines } = capture('info', {}, { secrets: ['n-secret-value'] });
  log.info('x', { newline: 'a\nn-secret-valuX', backslash: 'a\\n-secret-value' });
  const [line] = lines();
  assert.equal(line!.newline, 'a\nn-secret-valuX');
  assert.equal(line!.backslash, `a\\${REDACTED}`);
  assert.ok(!raw[0]!.includes('n-secret-value'));
});

test('collectSecrets gathers every configured secret value and nothing public', () => {
  const config = validateConfigObject({
    listen: { host: '127.0.0.1', port: 0 },
    auth: {
      anonymous: true,
      oauth: { issuer: 'https://issuer.example', audience: 'https://gw.example/mcp', introspection: { url: 'https://issuer.example/introspect', clientId: 'gw', clientSecret: 'introspection-secret' } },
    },
    upstreams: [
      {
        name: 'api',
        url: 'https://svc:url%40password@api.example/mcp',
        headers: { Authorization: 'Bearer static-upstream-token', 'X-Acme-Key': 'acme-key-value' },
        clientCredentials: { tokenUrl: 'https://issuer.example/token', clientId: 'cc', clientSecret: 'cc-client-secret' },
      },
      {
        name: 'local',
        command: ['node', 'server.js'],
        env: { GITHUB_TOKEN: 'gh-env-token', DB_PASSWORD: 'db-env-password', DATABASE_URL: 'postgres://app:dsn-password@db/app', LOG_FORMAT: 'json-lines', KEYBOARD_LAYOUT: 'dvorak-layout' },
      },
    ],
    admin: { token: 'admin-token-value' },
  });
  const secrets = collectSecrets(config);
  for (const s of [
    'introspection-secret', 'Bearer static-upstream-token', 'static-upstream-token', 'acme-key-value', 'url%40password', 'url@password',
    'cc-client-secret', 'gh-env-token', 'db-env-password', 'dsn-password', 'admin-token-value',
  ]) {
    assert.ok(secrets.includes(s), `missing ${s} in ${JSON.stringify(secrets)}`);
  }
  for (const s of ['json-lines', 'dvorak-layout', 'gw', 'cc', 'https://issuer.example']) assert.ok(!secrets.includes(s), `${s} is not a secret`);

  const { log, raw } = capture('debug', {}, { secrets });
  log.info('starting', { upstream: 'api', note: 'sent Bearer static-upstream-token with X-Acme-Key acme-key-value', env: { GITHUB_TOKEN: 'gh-env-token', DB: 'postgres://app:dsn-password@db/app' } });
  log.debug('admin', { t: 'admin-token-value', s: 'introspection-secret cc-client-secret' });
  const out = raw.join('');
  for (const s of secrets) assert.ok(!out.includes(s), `${s} leaked: ${out}`);
});

test('collectSecrets takes the password of a Redis store URL', () => {
  const config = validateConfigObject({
    listen: { host: '127.0.0.1', port: 0 },
    auth: { anonymous: true },
    upstreams: [{ name: 'app', url: 'http://127.0.0.1:3001/mcp' }],
    store: { kind: 'redis', url: 'redis://default:redis-password-value@cache:6379/0' },
  });
  assert.deepEqual(collectSecrets(config), ['redis-password-value']);
});

test('collectSecrets takes the password of Redis Sentinel, and the logger scrubs it', () => {
  const config = validateConfigObject({
    listen: { host: '127.0.0.1', port: 0 },
    auth: { anonymous: true },
    upstreams: [{ name: 'app', url: 'http://127.0.0.1:3001/mcp' }],
    store: { kind: 'redis', url: 'redis://:redis-password-value@cache:6379/0', sentinel: { name: 'primary', nodes: ['s1:26379'], password: 'sentinel-password-value' } },
  });
  const secrets = collectSecrets(config);
  assert.ok(secrets.includes('sentinel-password-value'), JSON.stringify(secrets));
  const { log, raw } = capture('debug', {}, { secrets });
  log.error('store unavailable', { detail: 'AUTH sentinel-password-value refused by s1:26379' });
  assert.ok(!raw.join('').includes('sentinel-password-value'), raw.join(''));
});

test('isoTime writes what Date#toISOString writes: across seconds, days, leap years, backwards, and outside years 0-9999', () => {
  const same = (ms: number): void => assert.equal(isoTime(ms), new Date(ms).toISOString(), `at ${ms}`);
  // Every millisecond across a second's and a day's and a year's turn, forwards then backwards.
  for (const edge of [Date.UTC(2026, 11, 1, 15, 6, 9), Date.UTC(2026, 11, 31, 23, 59, 59, 999) + 1, Date.UTC(2024, 1, 29)]) {
    for (let ms = edge - 1500; ms <= edge + 1500; ms++) same(ms);
    for (let ms = edge + 1500; ms >= edge - 1500; ms -= 7) same(ms);
  }
  // Before 1970 and at the ends of four-digit years, then years that take a sign and six digits.
  for (const ms of [-1, -999, -1000, -1001, 0, -62167219200000, -62167219200001, Date.UTC(9999, 11, 31, 23, 59, 59, 999), 253402300800000, -62198755200001, 8.64e15, -8.64e15]) same(ms);
  // A spread of times (a fixed walk, so a failure repeats).
  let ms = Date.UTC(1901, 0, 1);
  for (let i = 0; i < 20_000; i++) {
    same(ms);
    ms += 1 + ((i * 2654435761) % 9_000_000_000);
  }
});

test('nameJson is JSON.stringify, kept for names that recur, and its table stays bounded', () => {
  for (const name of ['request', 'bench', 'crm-eu', 'a "quoted" name', 'back\\slash', 'tab\there', 'line\nbreak', 'ünïcödé ✓', '\u0000\u001f', '\ud800 lone surrogate', '']) {
    assert.equal(nameJson(name), JSON.stringify(name));
    assert.equal(nameJson(name), JSON.stringify(name), 'the kept text, the second time');
  }
  for (let i = 0; i < 1000; i++) assert.equal(nameJson(`upstream-${i}`), `"upstream-${i}"`);
  assert.ok(knownNames() <= 256, `at most 256 kept, ${knownNames()} are`);
});

test('a log reader that falls behind costs dropped lines, counted and reported, never unbounded memory', () => {
  const written: string[] = [];
  const stream = { writableLength: 0, write: (chunk: Uint8Array | string) => void written.push(Buffer.from(chunk).toString('utf8')) };
  const write = batchedWriter(stream, 1_000);
  write('{"msg":"one"}\n');
  write.flush!();
  assert.deepEqual(written, ['{"msg":"one"}\n']);
  // The reader stops taking: what waits passes the limit, and the next batches are dropped.
  stream.writableLength = 5_000;
  write('{"msg":"two"}\n');
  write('{"msg":"three"}\n');
  write.flush!();
  write('{"msg":"four"}\n');
  write.flush!();
  assert.equal(written.length, 1, 'nothing more is held for a reader that does not read');
  // It catches up: the next batch says what was lost, then goes on.
  stream.writableLength = 0;
  write('{"msg":"five"}\n');
  write.flush!();
  const after = written.slice(1).join('').trimEnd().split('\n');
  assert.equal(after.length, 2, 'the notice, then the line');
  const [notice, five] = after.map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(notice!.level, 'warn');
  assert.equal(notice!.dropped, 3);
  assert.equal(five!.msg, 'five');
});

test('batched lines reach the stream whole and in order: UTF-8 text, a line longer than a batch, a batch the stream still holds', () => {
  // Like a Node stream: with nothing waiting, a chunk is taken at once (here, copied); with bytes waiting it
  // is kept as it was given, and the writer must not reuse a buffer the stream still holds.
  const held: Array<Uint8Array | string> = [];
  const stream = { writableLength: 0, write: (chunk: Uint8Array | string) => void held.push(stream.writableLength === 0 && typeof chunk !== 'string' ? Buffer.from(chunk) : chunk) };
  const write = batchedWriter(stream);
  const text = (): string => held.map((c) => (typeof c === 'string' ? c : Buffer.from(c).toString('utf8'))).join('');
  write('{"msg":"ünïcödé ✓ 😀"}\n');
  stream.writableLength = 100;
  write.flush!();
  write('{"msg":"second"}\n');
  write.flush!();
  assert.equal(text(), '{"msg":"ünïcödé ✓ 😀"}\n{"msg":"second"}\n', 'the first batch is intact after the second');
  // Longer than a batch can hold: written on its own, after the lines before it.
  stream.writableLength = 0;
  const long = `{"msg":"${'x'.repeat(70_000)}"}\n`;
  write('{"msg":"before"}\n');
  write(long);
  write('{"msg":"after"}\n');
  write.flush!();
  assert.equal(text(), `{"msg":"ünïcödé ✓ 😀"}\n{"msg":"second"}\n{"msg":"before"}\n${long}{"msg":"after"}\n`);
  // Many lines: batches fill and go out without a timer, nothing lost or torn.
  held.length = 0;
  const many = Array.from({ length: 2_000 }, (_, i) => `{"msg":"line ${i} ${'é'.repeat(i % 50)}"}\n`);
  for (const line of many) write(line);
  write.flush!();
  assert.ok(held.length > 1, 'more than one batch');
  assert.equal(text(), many.join(''));
});

// A hang detector, not a timing assertion: the work runs in a child process, which is stopped after 30 s.
// With the JWT shape tried at every `eyJ` of a run, a megabyte of them took minutes (64 KB: 0.7 s on this
// VM), and a synchronous regex cannot be interrupted in-process; found once per run, about 10 ms.
test('a megabyte of a credential shape\'s prefix is judged in one pass (audited arguments are scanned whole)', { timeout: 60_000 }, async () => {
  const logger = new URL('../../../src/log/logger.ts', import.meta.url).href;
  const code = `import(${JSON.stringify(logger)}).then(({ mayHoldSecrets, redactText }) => {
    for (const prefix of ['eyJ', 'EYJ', 'eyJa.', 'gh_', 'Bearer ']) {
      const text = prefix.repeat(Math.ceil(1000000 / prefix.length));
      mayHoldSecrets({ argument: text });
      redactText(text);
    }
    process.stdout.write('done');
  })`;
  const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', '-e', code], { timeout: 30_000 });
  assert.equal(stdout, 'done');
  // Still found after a quote, an equals sign, a space, at the start, and glued to a word (the word goes too).
  assert.equal(redactText('"eyJhbGci.eyJzdWIi.c2ln" x=eyJa.b.c eyJa.b.c'), `"${REDACTED}" x=${REDACTED} ${REDACTED}`);
  assert.equal(redactText('id_token_eyJhbGci.eyJzdWIi.c2ln end'), `${REDACTED} end`);
  assert.equal(redactText('eyJa.b and plain.dotted.words'), 'eyJa.b and plain.dotted.words');
  assert.equal(mayHoldSecrets({ a: ['eyJa.b.c'] }), true);
});
