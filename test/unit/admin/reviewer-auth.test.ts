// Unit tests for ReviewerAuth.configure (src/admin/reviewer-auth.ts): a reload's new admin token and groups
// apply at once, and browser sessions opened under the old ones end.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReviewerAuth, SESSION_COOKIE } from '../../../src/admin/reviewer-auth.js';

const OLD = 'old-admin-token-0123';
const NEW = 'new-admin-token-4567';

function sessionHeaders(id: string): { cookie: string } {
  return { cookie: `${SESSION_COOKIE}=${id}` };
}

describe('ReviewerAuth.configure', () => {
  it('swaps the token: the new one is accepted, the old one refused, and open sessions end', async () => {
    const auth = new ReviewerAuth(OLD, [], undefined);
    assert.equal((await auth.credential(OLD)).ok, true);
    const { id } = auth.openSession({ subject: 'admin-token', groups: [], admin: true });
    assert.equal(auth.session(sessionHeaders(id))?.ok, true);

    auth.configure(NEW, []);
    assert.equal((await auth.credential(NEW)).ok, true);
    assert.deepEqual(await auth.credential(OLD), { ok: false, status: 401, message: 'The admin credential is not valid' });
    assert.equal(auth.session(sessionHeaders(id)), undefined, 'a session opened under the old token ends with it');
  });

  it('keeps sessions when neither the token nor the groups changed; a change of groups ends them', () => {
    const auth = new ReviewerAuth(OLD, ['reviewers'], undefined);
    const { id } = auth.openSession({ subject: 'alice', groups: ['reviewers'], admin: false });
    auth.configure(OLD, ['reviewers']);
    assert.equal(auth.session(sessionHeaders(id))?.ok, true, 'a reload of something else leaves reviewers signed in');
    auth.configure(OLD, ['auditors']);
    assert.equal(auth.session(sessionHeaders(id)), undefined);
  });

  it('a token removed by the reload is refused', async () => {
    const auth = new ReviewerAuth(OLD, ['reviewers'], undefined);
    auth.configure(undefined, ['reviewers']);
    assert.equal((await auth.credential(OLD)).ok, false);
  });
});

describe('ReviewerAuth.credential', () => {
  it('a token that cannot be judged now (issuer down) is 503, not a refusal a failure limit would count', async () => {
    const auth = new ReviewerAuth(OLD, ['reviewers'], async () => ({ ok: false, unavailable: true }));
    const down = await auth.credential('eyJ.an.access-token');
    assert.ok(!down.ok && down.status === 503, JSON.stringify(down));
    const refusing = new ReviewerAuth(OLD, ['reviewers'], async () => ({ ok: false }));
    assert.deepEqual(await refusing.credential('eyJ.an.access-token'), { ok: false, status: 401, message: 'The admin credential is not valid' });
  });
});
