// A key-set URL learned from the issuer's metadata is fetched only when it is https, or plain http on
// loopback for a loopback issuer: a URL from a network answer must not steer Gatehouse to internal
// addresses (2026-07-28 security best practices §Server-Side Request Forgery).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { acceptableJwksUri } from '../../../src/auth/jwks-cache.js';

describe('acceptableJwksUri', () => {
  it('accepts https anywhere', () => {
    assert.equal(acceptableJwksUri('https://keys.example.com/jwks', 'https://auth.example.com'), true);
  });
  it('accepts plain http only between loopback addresses', () => {
    assert.equal(acceptableJwksUri('http://127.0.0.1:9000/jwks', 'http://127.0.0.1:9000'), true);
    assert.equal(acceptableJwksUri('http://localhost/jwks', 'http://127.0.0.1:9000'), true);
  });
  it('refuses plain http to other hosts, and loopback keys for a remote issuer', () => {
    assert.equal(acceptableJwksUri('http://169.254.169.254/latest/meta-data', 'https://auth.example.com'), false);
    assert.equal(acceptableJwksUri('http://10.0.0.5/jwks', 'http://10.0.0.4'), false);
    assert.equal(acceptableJwksUri('http://127.0.0.1/jwks', 'https://auth.example.com'), false);
    assert.equal(acceptableJwksUri('file:///etc/passwd', 'https://auth.example.com'), false);
    assert.equal(acceptableJwksUri('not a url', 'https://auth.example.com'), false);
  });
});
