// A URL nested inside another (`https://ok.example/fetch?u=http://10.0.0.1/`, `http://ok.example/#http://
// 169.254.169.254/`, `https://ok.example/p/http://10.0.0.1/x`) is a destination too: a server, or a
// fetch-through service it calls, may unwrap and fetch it. Until 5 December the whole string was read as one
// URL and the nested one swallowed, so an argument or a resources/read URI naming a public host passed
// whatever it wrapped. Nested http(s), ws(s), ftp and file URLs in a URL's path, query or fragment are now
// judged, as written and percent-decoded once (`u=http%3A%2F%2F10.0.0.1%2F`), to MAX_URL_NESTING levels and
// MAX_NESTED_URLS in one string; past either the string is unread, and refused.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { destinationsIn, MAX_NESTED_URLS, MAX_URL_NESTING } from '../../../src/policy/egress/destinations.js';
import { EgressPolicy } from '../../../src/policy/egress/egress-policy.js';
import { destinationsOfUri } from '../../../src/policy/egress/resource-uri.js';
import type { Principal } from '../../../src/pipeline/principal.js';
import type { Route } from '../../../src/pipeline/context.js';

const resolver = async (host: string) => {
  if (host.endsWith('.example')) return ['93.184.216.34'];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};
const ALICE: Principal = { subject: 'alice', scopes: [], groups: [], via: 'api_key', keyId: 'alice' };
const ROUTE: Route = { kind: 'tools', ref: 'web/fetch', publicName: 'fetch', original: 'fetch', upstream: 'web', listed: true, params: [] };
const policy = new EgressPolicy([], resolver);

/** The hosts found in `args`, sorted. */
const hostsIn = (args: unknown) => [...new Set(destinationsIn(args, undefined).found.map((d) => d.host))].sort();

/** The first block of the default policy on the destinations in `args`, or 'passed'. */
async function verdict(args: unknown): Promise<string> {
  const rule = policy.ruleFor(ALICE, ROUTE);
  const blocks = await Promise.all(destinationsIn(args, undefined).found.map((d) => policy.check(d, rule)));
  return blocks.find((b) => b !== undefined)?.reason ?? 'passed';
}

/** `levels` URLs each in the query of the one before, the innermost naming 10.0.0.1. */
const nestedLevels = (levels: number) => `https://ok.example/?u=${'https://hop.example/?u='.repeat(levels - 1)}http://10.0.0.1/`;

test('a URL in the query, fragment or path of another is judged, in a destination field and in free text', async () => {
  for (const url of [
    'https://ok.example/fetch?u=http://10.0.0.1/',
    'http://ok.example/#http://169.254.169.254/',
    'https://ok.example/proxy/http://10.0.0.1/x',
    'https://ok.example/proxy/http:/10.0.0.1/x',
    'https://ok.example/fetch?lang=en&u=ws://10.0.0.1:9000/',
  ]) {
    assert.match(await verdict({ url }), /is a (private|metadata) address/, url);
    assert.match(await verdict({ note: `please read ${url} for me` }), /is a (private|metadata) address/, `free text: ${url}`);
  }
});

test('a nested URL percent-encoded once is decoded once, and a query parameter ends at `&`', () => {
  assert.deepEqual(hostsIn({ url: 'https://ok.example/fetch?u=http%3A%2F%2F10.0.0.1%2F' }), ['10.0.0.1', 'ok.example']);
  assert.deepEqual(hostsIn({ url: 'https://ok.example/fetch?u=HTTP%3a%2f%2f169.254.169.254%2f&x=1' }), ['169.254.169.254', 'ok.example']);
  assert.deepEqual(hostsIn({ url: 'https://ok.example/fetch?u=http://10.0.0.1&lang=en' }), ['10.0.0.1', 'ok.example']);
  // Twice encoded: each level of nesting decodes its own query once, as each unwrapping server would.
  assert.deepEqual(hostsIn({ url: 'https://ok.example/?u=https%3A%2F%2Fhop.example%2F%3Fv%3Dhttp%253A%252F%252F10.0.0.1' }), ['10.0.0.1', 'hop.example', 'ok.example']);
  assert.deepEqual(hostsIn({ url: 'https://ok.example/?f=file%3A%2F%2Ffiles.example%2Fshare' }), ['files.example', 'ok.example']);
});

test('a URL with nothing nested names only its own host; a custom scheme in the query is not a nested URL', async () => {
  assert.deepEqual(hostsIn({ url: 'https://ok.example/search?q=a:b&page=2#top' }), ['ok.example']);
  assert.deepEqual(hostsIn({ url: 'https://ok.example/?ref=test://example-resource' }), ['ok.example']);
  assert.equal(await verdict({ url: 'https://web.archive.example/web/2020/https://docs.example/' }), 'passed');
});

test(`nesting to ${MAX_URL_NESTING} levels is read; deeper, or more than ${MAX_NESTED_URLS} nested URLs in one string, is unread`, () => {
  const deepest = destinationsIn({ url: nestedLevels(MAX_URL_NESTING) }, undefined);
  assert.equal(deepest.unread, false);
  assert.ok(deepest.found.some((d) => d.host === '10.0.0.1'), 'the innermost URL is found');
  assert.equal(destinationsIn({ url: nestedLevels(MAX_URL_NESTING + 1) }, undefined).unread, true);
  const wide = `https://ok.example/?${Array.from({ length: MAX_NESTED_URLS + 1 }, (_, i) => `u${i}=https://h${i}.example/`).join('&')}`;
  assert.equal(destinationsIn({ url: wide }, undefined).unread, true);
  assert.equal(destinationsIn({ [wide]: 1 }, undefined).unread, true, 'a key is read as a value is');
  assert.equal(destinationsIn({ url: wide.replace(/&u32=.*$/, '') }, undefined).unread, false, `${MAX_NESTED_URLS} are read`);
});

test('a resources/read URI is read for nested URLs too, and refused past the bounds', () => {
  const read = destinationsOfUri('https://reader.example/read?u=http%3A%2F%2F169.254.169.254%2Flatest%2F');
  assert.deepEqual(read.found.map((d) => [d.path, d.host]), [['uri', 'reader.example'], ['uri', '169.254.169.254']]);
  assert.equal(read.unread, false);
  assert.deepEqual(destinationsOfUri(nestedLevels(MAX_URL_NESTING + 1)), { found: [], unread: true });
});

// The open-redirect shape: a server resolving `next` against its own base fetches the host over http or https.
test('a scheme-relative URL as a query value (`?next=//10.0.0.1/`) is judged over http and https; a doubled slash in a path is not', async () => {
  for (const url of ['https://ok.example/login?next=//10.0.0.1/admin', 'https://ok.example/login?next=%2F%2F169.254.169.254%2F', 'https://ok.example/login?next=\\\\10.0.0.1']) {
    const found = destinationsIn({ url }, undefined).found.filter((d) => d.host !== 'ok.example');
    assert.deepEqual(found.map((d) => d.scheme).sort(), ['http', 'https'], url);
    assert.match(await verdict({ url }), /is a (private|metadata) address/, url);
  }
  assert.deepEqual(hostsIn({ url: 'https://ok.example/a//b//c?x=1' }), ['ok.example']);
});
