// The upstream rows of the doctor's report: reachable, era (and a pin that contradicts it), tools, and each
// tool that clients will see under another name, or not at all.

import type { GatehouseConfig } from '../config/types.js';
import { isStdioUpstream } from '../config/types.js';
import type { Logger } from '../log/logger.js';
import type { UpstreamProfile } from '../pipeline/ports.js';
import { readAnnotations } from '../protocol/param-headers.js';
import { finding, type CheckLimits, type Finding } from './finding.js';
import { planNames } from './tool-names.js';
import { inspectUpstream, type UpstreamInspection } from './upstream-checks.js';

export async function checkUpstreams(config: GatehouseConfig, limits: CheckLimits, log: Logger): Promise<Finding[]> {
  const seen = await Promise.all(config.upstreams.map((u) => inspectUpstream(u, config.sessions.inputTimeoutMs, limits, log)));
  // Tools with an x-mcp-header annotation the catalog cannot use are left out of it, and out of the naming.
  const leftOut: Array<{ upstream: string; name: string; reason: string }> = [];
  const refs: Array<{ upstream: string; name: string }> = [];
  for (const s of seen) {
    for (const tool of s.tools ?? []) {
      if (typeof tool.name !== 'string') continue;
      const annotations = readAnnotations(tool.inputSchema);
      if (annotations.ok) refs.push({ upstream: s.config.name, name: tool.name });
      else leftOut.push({ upstream: s.config.name, name: tool.name, reason: annotations.reason });
    }
  }
  const plan = planNames(refs, config.tools.naming.prefix, config.upstreams.map((u) => u.name));
  const out: Finding[] = [];
  seen.forEach((s, i) => {
    const name = s.config.name;
    out.push(...reachAndEra(s, i));
    if (s.profile === undefined) return;
    if (s.failure?.stage === 'tools') {
      out.push(finding(`upstream ${name}: tools`, 'fail', `could not list its tools: ${s.failure.message}`, 'the catalog would show no tools of this upstream; check the server'));
      return;
    }
    if (s.tools === undefined) {
      out.push(finding(`upstream ${name}: tools`, 'ok', 'offers no tools (no tools capability)', undefined, { tools: 0 }));
      return;
    }
    const renamed = plan.renamed.filter((r) => r.upstream === name);
    const dropped = leftOut.filter((l) => l.upstream === name);
    const parts = [`${s.tools.length} tool${s.tools.length === 1 ? '' : 's'}`];
    if (plan.prefixed) parts.push(`listed as ${name}_<tool> (tools.naming.prefix: ${config.tools.naming.prefix})`);
    if (renamed.length > 0) parts.push(`${renamed.length} renamed`);
    if (dropped.length > 0) parts.push(`${dropped.length} left out`);
    const data = {
      tools: s.tools.length,
      renamed: renamed.map((r) => ({ name: r.name, publicName: r.publicName, reasons: r.reasons })),
      leftOut: dropped.map((d) => ({ name: d.name, reason: d.reason })),
    };
    out.push(finding(`upstream ${name}: tools`, renamed.length + dropped.length > 0 ? 'warn' : 'ok', parts.join('; '), undefined, data));
    for (const r of renamed) {
      out.push(finding(`upstream ${name}: tool ${JSON.stringify(r.name)}`, 'warn', `clients see it as "${r.publicName}": ${r.reasons.join('; ')}`,
        `clients must call "${r.publicName}"; policies and audit records name it by its ref ${name}/${r.name}`));
    }
    for (const d of dropped) {
      out.push(finding(`upstream ${name}: tool ${JSON.stringify(d.name)}`, 'warn', `left out of the catalog: invalid x-mcp-header annotation (${d.reason})`, 'fix the annotation in the server\'s inputSchema'));
    }
  });
  return out;
}

function reachAndEra(s: UpstreamInspection, index: number): Finding[] {
  const name = s.config.name;
  const at = `upstreams[${index}]`;
  const stdio = isStdioUpstream(s.config);
  const failure = s.failure;
  // The gateway's messages name the upstream ("Upstream "crm" is unreachable (…)"); the row already does.
  const own = /^Upstream "[^"]*" (.*)$/s.exec(failure?.message ?? '')?.[1];
  if (s.profile === undefined && failure?.stage !== 'era') {
    const detail = stdio
      ? `"${s.where}" ${own ?? `could not be started or talked to: ${failure?.message}`}`
      : own !== undefined ? `${s.where} ${own}` : `cannot reach ${s.where}: ${failure?.message}`;
    const hint = unreachableHint(stdio, at, failure?.code, failure?.message ?? '');
    return [finding(`upstream ${name}`, 'fail', detail, hint, { reachable: false })];
  }
  const server = describeServer(s.serverInfo);
  const over = s.transport === 'sse' ? ' over HTTP+SSE (2024-11-05)' : s.transport === 'streamableHttp' ? ' over Streamable HTTP' : '';
  const reach = finding(`upstream ${name}`, 'ok', `${stdio ? `"${s.where}" starts and answers` : `answers at ${s.where}${over}`}${server}`, undefined, { reachable: true, transport: s.transport });
  if (s.profile === undefined) {
    const refused = /\(HTTP 40[13]\)/.test(failure?.message ?? '');
    let hint = `is ${at}.url the server's MCP endpoint (often …/mcp)?`;
    if (stdio) hint = `is ${at}.command an MCP server?`;
    else if (refused) hint = `the server refused Gatehouse's credentials: check ${at}.headers or ${at}.clientCredentials`;
    return [reach, finding(`upstream ${name}: era`, 'fail', `answers, but not as an MCP server Gatehouse can use: ${own !== undefined ? `it ${own}` : failure?.message}`, hint)];
  }
  return [reach, eraFinding(name, at, s.config.era, s.profile)];
}

function unreachableHint(stdio: boolean, at: string, code: string | undefined, message: string): string {
  if (stdio && /working directory \(cwd\)/.test(message)) return `check ${at}.cwd: the directory the command runs in (a relative one is taken from where Gatehouse runs)`;
  if (stdio) return `check that ${at}.command runs on its own and speaks MCP on stdin/stdout (its logs on stderr)`;
  if (/access token/.test(message)) return `check ${at}.clientCredentials (tokenUrl, clientId, clientSecret) and that the token endpoint is reachable from here`;
  if (code === 'GW_ERR_UPSTREAM_TIMEOUT' || code === 'deadline') return `the server accepted no request in time; check it, or ${at}.timeouts`;
  return `is the server running, and is ${at}.url right? (in a container, 127.0.0.1 is the container itself)`;
}

/** The detected era, measured against the pin. */
function eraFinding(name: string, at: string, pinned: 'auto' | 'modern' | 'legacy', profile: UpstreamProfile): Finding {
  const check = `upstream ${name}: era`;
  const alsoLegacy = profile.era === 'modern' && profile.alsoLegacy;
  const data = { era: profile.era, version: profile.version, pinned, ...(profile.era === 'modern' ? { alsoLegacy } : {}) };
  const seen = `${profile.era} (${profile.version})${alsoLegacy ? ', and it serves legacy clients too' : ''}`;
  if (pinned === 'modern' && profile.era === 'legacy') {
    return finding(check, 'fail', `pinned era: modern, but the server answered like a legacy server (${profile.version})`,
      `set era: auto (or legacy) on ${at}: as pinned, calls through Gatehouse fail (502)`, data);
  }
  if (pinned === 'legacy' && profile.era === 'modern' && !alsoLegacy) {
    return finding(check, 'fail', `pinned era: legacy, but the server speaks only ${profile.version} (it refused the legacy initialize)`,
      `set era: auto (or modern) on ${at}: as pinned, calls through Gatehouse fail (502)`, data);
  }
  if (pinned === 'legacy' && profile.era === 'modern') {
    return finding(check, 'warn', `pinned era: legacy; the server also speaks ${profile.version}`,
      `with era: auto on ${at}, modern clients would reach it without being bridged`, data);
  }
  return finding(check, 'ok', `${seen}; ${pinned === 'auto' ? 'detected (era: auto)' : 'as pinned'}`, undefined, data);
}

function describeServer(info: unknown): string {
  if (info === null || typeof info !== 'object') return '';
  const { name, version } = info as { name?: unknown; version?: unknown };
  if (typeof name !== 'string') return '';
  return ` (server "${name}"${typeof version === 'string' ? ` ${version}` : ''})`;
}
