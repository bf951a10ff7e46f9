// Two callers, Alice and Bob, each with an API key and no scopes, through a gateway in front of a real
// 2026-07-28 server (v2 SDK): for the tests where what one caller was given must not work for the other
// (a requestState sealed to its caller).

import { hashKey } from '../../src/auth/key-hash.js';
import { startModernServer, type ModernServer } from '../fixtures/upstreams/modern-server.js';
import { startGateway, type TestGateway } from './gateway.js';

export const ALICE = 'gh_alice_0123456789abcdefghijklmnopqrstuv';
export const BOB = 'gh_bob_0123456789abcdefghijklmnopqrstuvwx';

/** The modern server (upstream `modern`) and the gateway; the caller closes both. */
export async function startModernForAliceAndBob(): Promise<{ upstream: ModernServer; gw: TestGateway }> {
  const upstream = await startModernServer();
  const gw = await startGateway({
    upstreams: [{ name: 'modern', url: upstream.url, era: 'modern' }],
    auth: { anonymous: false, apiKeys: [{ id: 'alice', hash: hashKey(ALICE), scopes: [] }, { id: 'bob', hash: hashKey(BOB), scopes: [] }] },
  });
  return { upstream, gw };
}
