// kill -9 under load (issue 12, "Shown by"): a bounded run of write calls with idempotency keys, through the
// built Gatehouse, against an upstream that counts executions. Gatehouse is killed with SIGKILL mid-run and
// started again on the same store; the client then retries every call. For SQLite and for Redis:
//   - every call the client saw answered has its audit record, and the chain verifies (gatehouse audit);
//   - no key executed twice upstream; a retry of an answered call gets that very answer again;
//   - a call that was running when the process died is `outcome_unknown` on retry, never run again.

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { runCli, serveCli, type ServingCli } from '../helpers/cli.js';
import { modernRequest } from '../helpers/http.js';
import { countingUpstreamAndRedis } from '../helpers/upstream-and-redis.js';

const CALLS = 150;
const CONCURRENCY = 8;
/** Kill once this many calls have been answered. */
const KILL_AFTER = 50;

const fixture = countingUpstreamAndRedis();

interface Answer {
  callId: string;
  text: string;
  replayed: boolean;
  code: string | undefined;
}

const agent = new Agent({ connections: CONCURRENCY + 2 });
after(() => agent.close());

/** One write call; undefined when the connection died without an answer. */
async function write(url: string, key: string, item: string, ms = 0): Promise<Answer | undefined> {
  const req = modernRequest(key, 'tools/call', { name: ms > 0 ? 'record_slowly' : 'record', arguments: ms > 0 ? { item, ms } : { item }, _meta: { idempotencyKey: key } });
  try {
    const res = await request(url, { method: 'POST', headers: req.headers, body: req.body, dispatcher: agent, headersTimeout: 30_000, bodyTimeout: 30_000 });
    const body = (await res.body.json()) as { result?: { content: Array<{ text: string }>; structuredContent?: { error?: { code: string } }; _meta?: Record<string, unknown> }; error?: unknown };
    if (!body.result) throw new Error(`HTTP ${res.statusCode}: ${JSON.stringify(body)}`);
    return { callId: String(res.headers['x-gatehouse-call-id']), text: body.result.content[0]!.text, replayed: body.result._meta?.['dev.gatehouse/replayed'] === true, code: body.result.structuredContent?.error?.code };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'ECONNREFUSED' || code === 'UND_ERR_CLOSED') return undefined;
    throw err;
  }
}

function configFile(store: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-durability-'));
  const file = join(dir, 'gatehouse.yaml');
  const config = { listen: { host: '127.0.0.1', port: 0 }, auth: { anonymous: true }, upstreams: [{ name: 'up', url: fixture.up.url, era: 'modern' }], store, idempotency: { requireKeys: true } };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

async function auditRecords(file: string): Promise<Array<{ callId: string; outcome: string; idempotencyKey?: string }>> {
  const out = await runCli(['audit', 'export', '--config', file]);
  assert.equal(out.code, 0, out.stderr);
  return out.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { callId: string; outcome: string; idempotencyKey?: string });
}

const stores: Array<{ kind: string; store: () => Record<string, unknown> }> = [
  { kind: 'sqlite', store: () => ({ kind: 'sqlite', path: join(mkdtempSync(join(tmpdir(), 'gatehouse-kill-')), 'state.db') }) },
  { kind: 'redis', store: () => ({ kind: 'redis', url: fixture.redis.url, keyPrefix: `kill-${Date.now()}:` }) },
];

for (const { kind, store } of stores) {
  describe(`kill -9 under load: ${kind}`, () => {
    test('answered calls are audited, the chain verifies, no key runs twice, a call cut short is outcome_unknown', { timeout: 120_000 }, async () => {
      const file = configFile(store());
      const run = `${kind}-${Date.now()}`;
      const keys = Array.from({ length: CALLS }, (_, i) => `${run}-key-${String(i).padStart(4, '0')}`);
      const firstAnswers = new Map<string, Answer>();
      let gw: ServingCli = await serveCli(['--config', file], { configStore: true });
      let killed = false;

      // A slow call that is running upstream when the process dies.
      const slowKey = `${run}-slow-key`;
      const slow = write(gw.url, slowKey, `${run}-slow`, 4_000);

      let next = 0;
      const worker = async (url: string): Promise<void> => {
        while (next < keys.length && !killed) {
          const i = next++;
          const answer = await write(url, keys[i]!, `${run}-item-${i}`);
          if (answer) firstAnswers.set(keys[i]!, answer);
          if (!killed && firstAnswers.size >= KILL_AFTER) {
            killed = true;
            gw.child.kill('SIGKILL');
          }
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, () => worker(gw.url)));
      assert.equal(await gw.exited, null, 'killed by a signal');
      assert.equal(await slow, undefined, 'the slow call lost its connection');
      assert.ok(firstAnswers.size >= KILL_AFTER && firstAnswers.size < CALLS, `${firstAnswers.size} calls answered before the kill`);
      // The slow call finishes upstream regardless (it was sent): wait for it, bounded.
      for (let i = 0; i < 100 && fixture.up.timesExecuted(slowKey) === 0; i++) await new Promise((r) => setTimeout(r, 100));
      assert.equal(fixture.up.timesExecuted(slowKey), 1);

      gw = await serveCli(['--config', file], { configStore: true });
      try {
        const retries = new Map<string, Answer>();
        let n = 0;
        const retryWorker = async (): Promise<void> => {
          while (n < keys.length) {
            const i = n++;
            const answer = await write(gw.url, keys[i]!, `${run}-item-${i}`);
            assert.ok(answer, `retry of ${keys[i]} was answered`);
            retries.set(keys[i]!, answer);
          }
        };
        await Promise.all(Array.from({ length: CONCURRENCY }, retryWorker));
        const slowRetry = await write(gw.url, slowKey, `${run}-slow`, 4_000);

        // No key ran twice; every key ran at most once, and those that were answered exactly once.
        for (const key of [...keys, slowKey]) assert.ok(fixture.up.timesExecuted(key) <= 1, `${key} executed ${fixture.up.timesExecuted(key)} times`);
        for (const [key, first] of firstAnswers) {
          assert.equal(fixture.up.timesExecuted(key), 1);
          const again = retries.get(key)!;
          assert.equal(again.replayed, true, `${key}: the retry is a replay`);
          assert.equal(again.text, first.text, `${key}: the retry got the first answer`);
        }
        // Calls cut by the kill: either never claimed (they run now, once) or in flight (unknown, not run again).
        for (const key of keys.filter((k) => !firstAnswers.has(k))) {
          const again = retries.get(key)!;
          if (again.code === 'outcome_unknown') continue;
          assert.equal(again.code, undefined, `${key}: ${JSON.stringify(again)}`);
          assert.match(again.text, /^recorded /);
          assert.equal(fixture.up.timesExecuted(key), 1);
        }
        assert.equal(slowRetry?.code, 'outcome_unknown', `the call running at the kill is not run again: ${JSON.stringify(slowRetry)}`);
        assert.equal(fixture.up.timesExecuted(slowKey), 1);

        const records = await auditRecords(file);
        const audited = new Set(records.map((r) => r.callId));
        for (const [key, a] of [...firstAnswers, ...retries]) assert.ok(audited.has(a.callId), `the answered call ${a.callId} (${key}) has its audit record`);
        assert.ok(audited.has(slowRetry!.callId));
        const verify = await runCli(['audit', 'verify', '--config', file]);
        assert.equal(verify.code, 0, verify.stderr);
        assert.match(verify.stdout, /^audit chain ok: \d+ records, last \d+, head [0-9a-f]{64}\n$/);
      } finally {
        await gw.stop();
      }
    });
  });
}
