// An upstream as a 2026-07-28 server for the catalog: its own messages when it is modern, the modern-client
// bridge in front of it when it is legacy; capabilities and identity from its discover or initialize result.

import { isObject, withoutExtensions } from '../protocol/era-shapes.js';
import { META_SERVER_INFO } from '../protocol/methods.js';
import type { UpstreamProfile } from './era-probe.js';
import type { ModernFace, UpstreamMessages } from '../pipeline/ports.js';


export function modernFaceOf(profile: UpstreamProfile, own: UpstreamMessages, bridged: () => UpstreamMessages, http: boolean): ModernFace {
  if (profile.era === 'modern') {
    const meta = isObject(profile.discover._meta) ? profile.discover._meta : {};
    return {
      messages: own,
      // Extensions are not routed, so not advertised (era-shapes.ts withoutExtensions).
      capabilities: isObject(profile.discover.capabilities) ? (withoutExtensions(profile.discover).capabilities as Record<string, unknown>) : {},
      serverInfo: meta[META_SERVER_INFO],
      ...(typeof profile.discover.instructions === 'string' ? { instructions: profile.discover.instructions } : {}),
      http,
    };
  }
  // Legacy core tasks are not the 2026 tasks extension: not advertised (GATEWAY-REQUIREMENTS §16.1).
  const capabilities = isObject(profile.init.capabilities) ? { ...profile.init.capabilities } : {};
  delete capabilities.tasks;
  return {
    messages: bridged(),
    capabilities,
    serverInfo: profile.init.serverInfo,
    ...(typeof profile.init.instructions === 'string' ? { instructions: profile.init.instructions } : {}),
    http: false,
    bridged: true,
  };
}
