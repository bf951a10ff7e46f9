// Every list, map and string in config/gatehouse.schema.json has an upper bound: the config is input, and a
// generated or mistaken file must not make the gateway hold, compile or walk an unbounded number of entries,
// nor keep (and match against on every call) a tool glob or a host name of megabytes.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

const SCHEMA_URL = new URL('../../../config/gatehouse.schema.json', import.meta.url);
const CHART_URL = new URL('../../../charts/gatehouse/values.schema.json', import.meta.url);

type Node = Record<string, unknown>;

// Lists and maps that may stay unbounded, by JSON pointer, each with the reason. Empty: none needs to.
const UNBOUNDED_ALLOWED: ReadonlyMap<string, string> = new Map();

interface Collection {
  pointer: string;
  kind: 'list' | 'map' | 'string' | 'key';
  bound: number | undefined;
}

/** Every list (type array, or items) and map (additionalProperties other than false) under node. */
function collections(node: unknown, pointer: string, out: Collection[] = []): Collection[] {
  if (Array.isArray(node)) {
    node.forEach((child, i) => collections(child, `${pointer}/${i}`, out));
    return out;
  }
  if (typeof node !== 'object' || node === null) return out;
  const n = node as Node;
  if (n['type'] === 'array' || 'items' in n) out.push({ pointer, kind: 'list', bound: n['maxItems'] as number | undefined });
  if ('additionalProperties' in n && n['additionalProperties'] !== false) out.push({ pointer, kind: 'map', bound: n['maxProperties'] as number | undefined });
  for (const [key, child] of Object.entries(n)) collections(child, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, out);
  return out;
}

/** Every string (type string, alone or among others) that is not one of a fixed set of values, and every map's key. */
function strings(node: unknown, pointer: string, out: Collection[] = []): Collection[] {
  if (Array.isArray(node)) {
    node.forEach((child, i) => strings(child, `${pointer}/${i}`, out));
    return out;
  }
  if (typeof node !== 'object' || node === null) return out;
  const n = node as Node;
  const type = n['type'];
  const isString = type === 'string' || (Array.isArray(type) && type.includes('string'));
  if (isString && !('enum' in n) && !('const' in n)) out.push({ pointer, kind: 'string', bound: n['maxLength'] as number | undefined });
  if ('additionalProperties' in n && n['additionalProperties'] !== false) {
    out.push({ pointer: `${pointer}/propertyNames`, kind: 'key', bound: (n['propertyNames'] as Node | undefined)?.['maxLength'] as number | undefined });
  }
  for (const [key, child] of Object.entries(n)) strings(child, `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, out);
  return out;
}

function at(root: unknown, pointer: string): Node {
  return pointer.split('/').slice(1).reduce<Node>((n, key) => n[key.replace(/~1/g, '/').replace(/~0/g, '~')] as Node, root as Node);
}

const schema = JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as unknown;
const found = collections(schema, '');
const texts = strings(schema, '');
// A value read through ${file:...} is validated as read (interpolation comes first): the PEM keys must hold a
// real chain, so their bound is far above the others'.
const PEM_BOUND = 1024 * 1024;

describe('config/gatehouse.schema.json bounds', () => {
  it('finds the lists and maps it checks (the walk reaches definitions and nested keys)', () => {
    const pointers = new Set(found.map((c) => c.pointer));
    for (const p of ['/properties/upstreams', '/properties/policy/properties/rules', '/definitions/policyRule/properties/tools', '/definitions/httpUpstream/properties/headers', '/definitions/approvalRule/properties/arguments']) {
      assert.ok(pointers.has(p), p);
    }
  });

  it('gives every list a maxItems and every map a maxProperties', () => {
    const unbounded = found.filter((c) => c.bound === undefined && !UNBOUNDED_ALLOWED.has(c.pointer)).map((c) => `${c.pointer} (${c.kind})`);
    assert.deepEqual(unbounded, []);
  });

  it('keeps each bound a positive integer, and at least minItems', () => {
    for (const c of found) {
      if (c.bound === undefined) continue;
      assert.ok(Number.isInteger(c.bound) && c.bound > 0, `${c.pointer}: ${String(c.bound)}`);
      const min = at(schema, c.pointer)['minItems'];
      if (typeof min === 'number') assert.ok(c.bound >= min, c.pointer);
    }
  });

  it('lists only pointers that exist and are still unbounded on purpose', () => {
    for (const pointer of UNBOUNDED_ALLOWED.keys()) assert.ok(found.some((c) => c.pointer === pointer && c.bound === undefined), pointer);
  });

  it('finds the strings it checks (free text, list items, map values and keys)', () => {
    const pointers = new Set(texts.map((c) => c.pointer));
    for (const p of ['/properties/listen/properties/host', '/properties/listen/properties/publicUrl', '/definitions/policyRule/properties/tools/items', '/definitions/httpUpstream/properties/headers/additionalProperties', '/definitions/httpUpstream/properties/headers/propertyNames', '/definitions/redisStore/properties/tls/properties/ca']) {
      assert.ok(pointers.has(p), p);
    }
  });

  it('gives every free-text string a maxLength and every map key one (propertyNames)', () => {
    assert.deepEqual(texts.filter((c) => !Number.isInteger(c.bound) || (c.bound as number) <= 0).map((c) => `${c.pointer} (${c.kind})`), []);
  });

  it('leaves room for a PEM chain or key read from a file in the TLS keys', () => {
    for (const key of ['ca', 'cert', 'key']) assert.equal(at(schema, `/definitions/redisStore/properties/tls/properties/${key}`)['maxLength'], PEM_BOUND, key);
  });
});

// The chart writes these values into the config: its schema must refuse what the config would, at render time
// rather than at the pod's start. Chart pointer -> the config schema's pointer for the same key.
const CHART_MIRRORS: ReadonlyArray<[string, string]> = [
  ['/properties/listen/properties/allowedHosts', '/properties/listen/properties/allowedHosts'],
  ['/properties/listen/properties/allowedOrigins', '/properties/listen/properties/allowedOrigins'],
  ['/properties/listen/properties/trustedProxies', '/properties/listen/properties/trustedProxies'],
  ['/properties/upstream/properties/uriPrefixes', '/definitions/httpUpstream/properties/uriPrefixes'],
  ['/properties/upstream/properties/headers', '/definitions/httpUpstream/properties/headers'],
  ['/properties/upstream/properties/clientCredentials/properties/scopes', '/definitions/httpUpstream/properties/clientCredentials/properties/scopes'],
  ['/properties/upstream/properties/timeouts/properties/tools', '/definitions/httpUpstream/properties/timeouts/properties/tools'],
  ['/properties/auth/properties/apiKeys', '/properties/auth/properties/apiKeys'],
  ['/properties/auth/properties/apiKeys/items/properties/scopes', '/definitions/apiKey/properties/scopes'],
  ['/properties/auth/properties/apiKeys/items/properties/tools', '/definitions/apiKey/properties/tools'],
  ['/properties/auth/properties/oauth/properties/algorithms', '/definitions/oauth/properties/algorithms'],
  ['/properties/auth/properties/oauth/properties/scopesSupported', '/definitions/oauth/properties/scopesSupported'],
  ['/properties/auth/properties/oauth/properties/authorizationServers', '/definitions/oauth/properties/authorizationServers'],
  ['/properties/auth/properties/requiredScopes', '/properties/auth/properties/requiredScopes'],
  ['/properties/store/properties/sentinel/oneOf/1/properties/nodes', '/definitions/redisStore/properties/sentinel/properties/nodes'],
  ['/properties/store/properties/cluster/oneOf/1/properties/nodes', '/definitions/redisStore/properties/cluster/properties/nodes'],
  ['/properties/admin/properties/groups', '/properties/admin/properties/groups'],
  ['/properties/tracing/properties/headers', '/properties/tracing/properties/headers'],
  ['/properties/tracing/properties/resourceAttributes', '/properties/tracing/properties/resourceAttributes'],
];

describe('charts/gatehouse/values.schema.json bounds', () => {
  const chart = JSON.parse(readFileSync(CHART_URL, 'utf8')) as unknown;
  const bound = (n: Node): unknown => n['maxItems'] ?? n['maxProperties'];

  it('bounds every config list and map the chart exposes as the config does', () => {
    for (const [chartPointer, configPointer] of CHART_MIRRORS) {
      assert.ok(bound(at(schema, configPointer)) !== undefined, configPointer);
      assert.equal(bound(at(chart, chartPointer)), bound(at(schema, configPointer)), chartPointer);
    }
  });

  it('bounds every string of the keys it writes into the config', () => {
    const passed = /^\/(definitions\/secretValue|properties\/(upstream|listen|auth|admin|tracing)\/|properties\/store\/properties\/(path|keyPrefix|sentinel|cluster|tlsServername)|properties\/metrics\/properties\/path)/;
    const unbounded = strings(chart, '').filter((c) => passed.test(c.pointer) && c.bound === undefined).map((c) => c.pointer);
    assert.deepEqual(unbounded, []);
    // A plain secret value may be a PEM: the config then holds each key to its own bound.
    assert.equal(at(chart, '/definitions/secretValue/oneOf/0')['maxLength'], PEM_BOUND);
  });

  it('bounds the items of the lists it mirrors as the config does', () => {
    for (const [chartPointer, configPointer] of CHART_MIRRORS) {
      const items = at(schema, configPointer)['items'] as Node | undefined;
      if (items?.['type'] !== 'string') continue;
      assert.equal((at(chart, chartPointer)['items'] as Node)['maxLength'], items['maxLength'], chartPointer);
    }
  });

  it('leaves room in extraUpstreams for the chart\'s own upstream only', () => {
    // The config's upstreams are the chart's upstream followed by extraUpstreams.
    assert.equal(at(chart, '/properties/extraUpstreams')['maxItems'], (at(schema, '/properties/upstreams')['maxItems'] as number) - 1);
  });
});
