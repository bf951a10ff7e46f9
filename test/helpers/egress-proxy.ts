// A real egress proxy on 127.0.0.1 and a real TCP target behind it, for tests of what the proxy tunnels: the
// target says "hello" and ends each connection, so a tunnel that went through shows it in its answer.

import { after, before } from 'node:test';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { createLogger, type LogLevel } from '../../src/log/logger.js';
import type { EgressPolicy } from '../../src/policy/egress/egress-policy.js';
import { EgressProxy, type EgressProxyHooks } from '../../src/policy/egress/proxy.js';

export interface ProxyAndTarget {
  /** The proxy's port on 127.0.0.1 (set once the file's `before` has run). */
  readonly proxyPort: number;
  /** The target's port on its host. */
  readonly targetPort: number;
}

/**
 * The proxy, judging by whatever `policy()` returns at each request, and the target on `targetHost`, started
 * before the file's tests and closed after them: call at the top of a test file. The log goes nowhere.
 */
export function proxyAndTarget(targetHost: string, policy: () => EgressPolicy, opts: { logLevel?: LogLevel; hooks?: EgressProxyHooks } = {}): ProxyAndTarget {
  let proxy: EgressProxy;
  let target: Server;
  let proxyPort = 0;
  let targetPort = 0;
  before(async () => {
    target = createServer((s) => s.end('hello'));
    await new Promise<void>((r) => target.listen(0, targetHost, r));
    targetPort = (target.address() as AddressInfo).port;
    proxy = new EgressProxy(policy, () => 'up', createLogger(opts.logLevel ?? 'error', () => {}), opts.hooks);
    proxyPort = Number(new URL(await proxy.listen('127.0.0.1', 0)).port);
  });
  after(async () => {
    await proxy.close();
    target.close();
  });
  return {
    get proxyPort() {
      return proxyPort;
    },
    get targetPort() {
      return targetPort;
    },
  };
}

/**
 * Sends `CONNECT authority` to the proxy. Resolves with what `enough` takes from the answer as soon as it
 * takes something (the connection is then let go), or with all the answer once the connection closes (a
 * refusal closes it; so does a tunnel when its target ends). Rejects after 5 s without either.
 */
export function connectAnswer(proxyPort: number, authority: string, enough?: (got: string) => string | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(proxyPort, '127.0.0.1', () => s.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`));
    let got = '';
    s.on('data', (d) => {
      got += String(d);
      const taken = enough?.(got);
      if (taken !== undefined) {
        resolve(taken);
        s.destroy();
      }
    });
    s.on('error', reject);
    s.on('close', () => resolve(got));
    s.setTimeout(5_000, () => reject(new Error('no answer')));
  });
}
