// Which resources/read URIs the egress stage reads (policy/egress/resource-uri.ts): the fetched schemes
// (http, https, ws, wss, ftp, file), whatever their case, and any URI that does not start with a plain
// scheme, since the WHATWG URL parser drops leading spaces and controls and tabs or newlines anywhere
// (URL Standard, basic URL parser steps 1–3): `\thttp://169.254.169.254/` is an http URL to a server that
// fetches it. A custom scheme (server/resources.mdx §Custom URI Schemes) is an identifier: not read.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { destinationsOfUri, mayNameDestination } from '../../../src/policy/egress/resource-uri.js';

test('fetched schemes are read, in any case; custom schemes are not', () => {
  for (const uri of ['http://a.example/', 'HTTPS://a.example/', 'ws://a.example/', 'wss://a.example/', 'ftp://a.example/', 'file:///etc/passwd', 'File://srv/share']) assert.equal(mayNameDestination(uri), true, uri);
  for (const uri of ['demo://169.254.169.254/x', 'test://static-text', 'postgres://db.internal/t/schema', 'note:hello', 'git+ssh://x', 'urn:isbn:123']) assert.equal(mayNameDestination(uri), false, uri);
});

test('a URI that does not start with a plain scheme is read whole, as the WHATWG parser would read it', () => {
  for (const uri of ['\thttp://169.254.169.254/', ' http://169.254.169.254/', 'ht\ttp://169.254.169.254/', '//169.254.169.254/x']) {
    assert.equal(mayNameDestination(uri), true, JSON.stringify(uri));
    assert.ok(destinationsOfUri(uri).found.some((d) => d.host === '169.254.169.254'), JSON.stringify(uri));
  }
});

test('the host the URL reaches is found, under the path `uri`, its port the one given or the scheme\'s', () => {
  assert.deepEqual(destinationsOfUri('https://proxy.example/fetch?q=1').found.map((d) => [d.path, d.scheme, d.host, d.port]), [['uri', 'https', 'proxy.example', 443]]);
  assert.deepEqual(destinationsOfUri('http://user@10.0.0.1:8080/admin').found.map((d) => [d.path, d.scheme, d.host, d.port]), [['uri', 'http', '10.0.0.1', 8080]]);
  assert.deepEqual(destinationsOfUri('file:///etc/hostname').found.map((d) => [d.scheme, d.host]), [['file', '']]);
  assert.deepEqual(destinationsOfUri('file://fileserver/share/x').found.map((d) => [d.scheme, d.host]), [['file', 'fileserver']]);
});
