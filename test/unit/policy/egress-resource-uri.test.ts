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

// Until 5 December these were custom schemes to the egress stage: `gopher://10.0.0.1:6379/_…` read by a
// server built on libcurl wrote to an internal Redis unjudged.
test('what curl-like clients fetch is read like the fetched schemes, a jar: URI by the URL inside it; test:// stays an identifier', () => {
  const reached = (uri: string) => (mayNameDestination(uri) ? destinationsOfUri(uri).found.map((d) => `${d.scheme}|${d.host}|${d.port ?? ''}`) : 'not read');
  assert.deepEqual(reached('gopher://10.0.0.1:6379/_SET%20x%201'), ['gopher|10.0.0.1|6379']);
  assert.deepEqual(reached('GOPHER://10.0.0.1/'), ['gopher|10.0.0.1|70']);
  assert.deepEqual(reached('ldap://ldap.internal.example/dc=x'), ['ldap|ldap.internal.example|389']);
  assert.deepEqual(reached('ldaps://ldap.internal.example/'), ['ldaps|ldap.internal.example|636']);
  assert.deepEqual(reached('dict://10.0.0.1:11211/stat'), ['dict|10.0.0.1|11211']);
  assert.deepEqual(reached('tftp://10.0.0.1/boot.img'), ['tftp|10.0.0.1|69']);
  assert.deepEqual(reached('sftp://files.internal.example/x'), ['sftp|files.internal.example|22']);
  assert.deepEqual(reached('scp://files.internal.example/x'), ['scp|files.internal.example|22']);
  assert.deepEqual(reached('smb://fileserver/share/x'), ['smb|fileserver|445']);
  assert.deepEqual(reached('telnet://10.0.0.1/'), ['telnet|10.0.0.1|23']);
  assert.deepEqual(reached('jar:http://169.254.169.254/lib.jar!/META-INF/MANIFEST.MF'), ['http|169.254.169.254|80']);
  assert.deepEqual(reached('jar:file:///opt/app/lib.jar!/a'), ['file||']);
  for (const uri of ['test://example-resource', 'demo://resource/1', 'gophers-note://10.0.0.1/', 'jarx:http://x']) assert.equal(reached(uri), 'not read', uri);
});
