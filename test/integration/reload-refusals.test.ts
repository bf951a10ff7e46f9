// A reload that cannot be built must leave the running config serving (DESIGN.md §3: an invalid new version
// is refused, logged and counted, and the old one stays), whether it came from reload() or from the watched
// file, and never take the gateway down.

import { after, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfigObject } from '../../src/config/load.js';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { reloadTaken } from '../helpers/file-reload.js';
import { startGateway } from '../helpers/gateway.js';
import { post, rpc } from '../helpers/http.js';
import { waitUntil } from '../helpers/stdio-children.js';

const cleanups: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// Matches the schema's URL pattern, but no URL parser takes port 99999: building its upstream throws.
const UNBUILDABLE = 'http://127.0.0.1:99999/mcp';

test('a reload whose upstream cannot be built is refused, and the running upstream stays', async () => {
  const a = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'A' }));
  cleanups.push(() => a.close());
  const base = { upstreams: [{ name: 'up', url: a.url, era: 'legacy' }], shutdown: { graceMs: 100 } };
  const gw = await startGateway(base);
  cleanups.push(() => gw.close());
  const who = async () => (await post(gw.url, rpc(1, 'tools/list'))).json().result?.who as string | undefined;
  assert.equal(await who(), 'A');

  const next = validateConfigObject({ ...base, upstreams: [{ name: 'up', url: UNBUILDABLE, era: 'legacy' }], listen: { host: '127.0.0.1', port: 0 }, auth: { anonymous: true }, idempotency: { requireKeys: false } }, 'test');
  const problems = await gw.gateway.reload(next);
  assert.ok(problems.length > 0, 'the reload is refused with its problem');
  assert.deepEqual(gw.gateway.reloads, { applied: 0, refused: 1 });
  assert.ok(gw.logs.some((l) => l.msg === 'config reload refused; the running config stays'), JSON.stringify(gw.logs));
  assert.equal(await who(), 'A', 'the running upstream still answers');
});

test('the watched file turning unbuildable is refused and logged; the gateway keeps serving', async () => {
  const a = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'A' }));
  cleanups.push(() => a.close());
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-reload-refusal-'));
  const file = join(dir, 'gatehouse.yaml');
  const text = (url: string) => `upstreams: [{ name: up, url: "${url}", era: legacy }]\nauth: { anonymous: true }\nidempotency: { requireKeys: false }\nstore: { kind: sqlite, path: ${JSON.stringify(join(dir, 'g.db'))} }\n`;
  writeFileSync(file, text(a.url));
  const gw = await startGateway({ upstreams: [{ name: 'up', url: a.url, era: 'legacy' }], store: { kind: 'sqlite', path: join(dir, 'g.db') } }, { configFile: file });
  cleanups.push(() => gw.close());
  const who = async () => (await post(gw.url, rpc(1, 'tools/list'))).json().result?.who as string | undefined;
  assert.equal(await who(), 'A');
  // The watcher takes its first look when listening starts; let it settle so the write below is a change.
  assert.equal(await gw.gateway.checkConfigFile(), 'unchanged');

  writeFileSync(file, text(UNBUILDABLE));
  // Taken by the watcher's poll or by this look, whichever came first: the refusal is what is waited for.
  assert.ok(await reloadTaken(gw.gateway, () => gw.gateway.reloads.refused > 0), JSON.stringify(gw.logs));
  assert.deepEqual(gw.gateway.reloads, { applied: 0, refused: 1 });
  const refusal = gw.logs.find((l) => l.msg === 'config reload refused; the running config stays');
  assert.ok(refusal, JSON.stringify(gw.logs));
  assert.equal(await who(), 'A', 'still serving the last good config');
});

// Building an upstream starts its sweepers at once (session tables, pooled sessions: intervals, unref'd, so
// they hold no process open but run, and hold the upstream, for ever). A reload whose third upstream cannot
// be built threw past the first two, built already, and nothing stopped their timers: each refused reload
// left more. The reload checks what the schema cannot (URLs a parser refuses, CIDRs), so what still throws is
// a config object reload() is handed without the schema's defaults (as an embedder may): here a
// clientCredentials without its `scopes`.
test('a reload whose later upstream cannot be built stops what the earlier ones started', async () => {
  const a = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'A' }));
  cleanups.push(() => a.close());
  const base = { upstreams: [{ name: 'up', url: a.url, era: 'legacy' }], shutdown: { graceMs: 100 } };
  const gw = await startGateway(base);
  cleanups.push(() => gw.close());
  const next = validateConfigObject(
    {
      ...base,
      upstreams: [
        { name: 'up', url: a.url, era: 'legacy' },
        { name: 'other', url: a.url, era: 'modern' },
        // `up` is unchanged, so kept (not built) by the reload: two new ones are built before the bad one.
        { name: 'another', url: a.url, era: 'legacy' },
        { name: 'bad', url: a.url, era: 'legacy', clientCredentials: { tokenUrl: `${a.url}/token`, clientId: 'id', clientSecret: 'secret' } },
      ],
      listen: { host: '127.0.0.1', port: 0 },
      auth: { anonymous: true },
      idempotency: { requireKeys: false },
    },
    'test',
  );
  delete (next.upstreams[3] as { clientCredentials?: { scopes?: string[] } }).clientCredentials!.scopes;
  // The intervals started while the reload builds, and those cleared: every one started must be stopped.
  const started = new Set<unknown>();
  const cleared = new Set<unknown>();
  const { setInterval: realSet, clearInterval: realClear } = globalThis;
  globalThis.setInterval = ((...args: Parameters<typeof realSet>) => {
    const t = realSet(...args);
    started.add(t);
    return t;
  }) as typeof realSet;
  globalThis.clearInterval = ((t: Parameters<typeof realClear>[0]) => {
    cleared.add(t);
    realClear(t);
  }) as typeof realClear;
  let problems: string[];
  try {
    problems = await gw.gateway.reload(next);
  } finally {
    globalThis.setInterval = realSet;
    globalThis.clearInterval = realClear;
  }
  assert.ok(problems.some((p) => /could not be built/.test(p)), problems.join('\n'));
  assert.ok(started.size >= 2, `the upstreams built before the bad one started their sweepers (${started.size})`);
  const left = () => [...started].filter((t) => !cleared.has(t)).length;
  assert.ok(await waitUntil(() => left() === 0, 2000), `${left()} of ${started.size} intervals left running`);
  assert.deepEqual(gw.gateway.reloads, { applied: 0, refused: 1 });
});

const ADMIN = 'admin-token-0123456789abcdef';

test('a reload that needs the admin API the running gateway does not have (admin.enabled needs a restart) is refused', async () => {
  const a = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'A' }));
  cleanups.push(() => a.close());
  const base = { upstreams: [{ name: 'up', url: a.url, era: 'legacy' }], shutdown: { graceMs: 100 } };
  const gw = await startGateway(base);
  cleanups.push(() => gw.close());
  assert.equal(gw.gateway.adminUrl, undefined);
  // The file now turns the admin API on (read only at start) and asks for reviewers: nobody could decide.
  const next = validateConfigObject({
    ...base,
    listen: { host: '127.0.0.1', port: 0 },
    auth: { anonymous: true },
    idempotency: { requireKeys: false },
    admin: { enabled: true, port: 0, token: ADMIN },
    tools: { pinning: 'enforce' },
    policy: { approvals: [{ id: 'review', tools: ['*'], by: 'reviewer' }] },
  }, 'test');
  const problems = await gw.gateway.reload(next);
  assert.ok(problems.some((p) => /policy\.approvals/.test(p)), problems.join('\n'));
  assert.ok(problems.some((p) => /tools\.pinning/.test(p)), problems.join('\n'));
  assert.ok(problems.some((p) => /restart/.test(p)), problems.join('\n'));
  assert.deepEqual(gw.gateway.reloads, { applied: 0, refused: 1 });
});

test('tools.pinning turned on by a reload is served by the running admin API: the pins can be listed and accepted', async () => {
  const a = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'A' }));
  cleanups.push(() => a.close());
  const base = { upstreams: [{ name: 'up', url: a.url, era: 'legacy' }], shutdown: { graceMs: 100 }, admin: { enabled: true, port: 0, token: ADMIN } };
  const gw = await startGateway({ ...base, tools: { pinning: 'off' } });
  cleanups.push(() => gw.close());
  const pins = async () => (await fetch(`${gw.gateway.adminUrl}/pins`, { headers: { authorization: `Bearer ${ADMIN}` } })).status;
  assert.equal(await pins(), 404, 'pinning off: no pins');
  const next = (pinning: string) => validateConfigObject({ ...base, listen: { host: '127.0.0.1', port: 0 }, auth: { anonymous: true }, idempotency: { requireKeys: false }, tools: { pinning } }, 'test');
  assert.deepEqual(await gw.gateway.reload(next('enforce')), []);
  assert.equal(await pins(), 200, 'pinning enforce after the reload: reviewers can see and accept changed tools');
  assert.deepEqual(await gw.gateway.reload(next('off')), []);
  assert.equal(await pins(), 404, 'and off again');
});

test('shutdown.graceMs changed by a reload is the drain the gateway gives at close', async () => {
  // Answers tools/list at once and holds every tools/call: the call is in flight when the gateway closes.
  const held: Array<() => void> = [];
  const a = await startFakeUpstream((_req, res, body) => {
    if (!body.includes('tools/call')) return jsonResult(res, body, { tools: [] });
    held.push(() => res.destroy());
  });
  cleanups.push(async () => {
    for (const release of held) release();
    await a.close();
  });
  const base = { upstreams: [{ name: 'up', url: a.url, era: 'legacy' }] };
  const gw = await startGateway({ ...base, shutdown: { graceMs: 8_000 } });
  let closed = false;
  cleanups.push(() => (closed ? Promise.resolve() : gw.close()));
  const next = validateConfigObject({ ...base, listen: { host: '127.0.0.1', port: 0 }, auth: { anonymous: true }, idempotency: { requireKeys: false }, shutdown: { graceMs: 300 } }, 'test');
  assert.deepEqual(await gw.gateway.reload(next), []);
  const inFlight = post(gw.url, rpc(2, 'tools/call', { name: 'slow', arguments: {} })).catch(() => undefined);
  assert.ok(await waitUntil(() => held.length === 1, 5000), 'the call reached the upstream');
  // The drain's timer runs on a mocked clock, and only while close() sets it and the clock is moved: all
  // synchronous, with microtasks alone let run between, so no other timer is made on the mocked clock.
  // The held call never finishes by itself: what ends the drain is its grace running out, at 300 ms, not 8 s.
  const graceOver = () => gw.logs.some((l) => l.msg === 'grace period over; closing the requests still in flight');
  mock.timers.enable({ apis: ['setTimeout'] });
  let closing: Promise<void>;
  try {
    closing = gw.gateway.close();
    mock.timers.tick(299);
    await microtasks();
    assert.equal(graceOver(), false, 'the drain still waits at 299 ms');
    mock.timers.tick(1);
  } finally {
    mock.timers.reset();
  }
  try {
    await microtasks();
    assert.ok(graceOver(), `the drain ended at 300 ms, the reloaded grace: ${JSON.stringify(gw.logs)}`);
  } finally {
    // Lets a drain that did not end (the first grace kept) finish, so the failure is told and not hung on.
    for (const release of held.splice(0)) release();
    await closing;
    closed = true;
  }
  await inFlight;
  const drain = gw.logs.find((l) => l.msg === 'shutting down: draining in-flight requests');
  assert.equal(drain?.graceMs, 300, JSON.stringify(drain));
});

/** Runs what is queued as microtasks (a resolved promise's continuations), and no timer or I/O callback. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

test('a change made to the file while the gateway was starting is applied at the watcher\'s first look', async () => {
  const a = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'A' }));
  const b = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { who: 'B' }));
  cleanups.push(() => a.close(), () => b.close());
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-reload-start-'));
  const file = join(dir, 'gatehouse.yaml');
  const text = (url: string) => `upstreams: [{ name: up, url: "${url}", era: legacy }]\nauth: { anonymous: true }\nidempotency: { requireKeys: false }\nstore: { kind: sqlite, path: ${JSON.stringify(join(dir, 'g.db'))} }\n`;
  // The gateway was built from A's text; by the time it listens (and starts watching) the file says B.
  writeFileSync(file, text(b.url));
  const gw = await startGateway({ upstreams: [{ name: 'up', url: a.url, era: 'legacy' }], store: { kind: 'sqlite', path: join(dir, 'g.db') } }, { configFile: file, configText: text(a.url) });
  cleanups.push(() => gw.close());
  const who = async () => (await post(gw.url, rpc(1, 'tools/list'))).json().result?.who as string | undefined;
  await gw.gateway.checkConfigFile();
  assert.ok(await waitUntil(() => gw.gateway.reloads.applied === 1, 5000), JSON.stringify(gw.logs));
  assert.equal(await who(), 'B', 'the file as it is now is the running config');
  assert.equal(await gw.gateway.checkConfigFile(), 'unchanged');
});
