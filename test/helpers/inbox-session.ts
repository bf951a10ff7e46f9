// A browser session on the inbox page without a browser: the login form posted as a browser posts it, and
// the session cookie it sets, for tests that read the page over HTTP.

import assert from 'node:assert/strict';
import { request } from 'undici';

/** Signs in at the admin listener `adminUrl` with this credential; resolves with the `name=value` of the session cookie. */
export async function inboxCookie(adminUrl: string, credential: string): Promise<string> {
  const login = await request(`${adminUrl}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ credential }).toString() });
  await login.body.dump();
  assert.equal(login.statusCode, 303, 'signed in: sent back to the page');
  return String(login.headers['set-cookie']).split(';')[0]!;
}
