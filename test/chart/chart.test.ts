// The Helm chart (charts/gatehouse) checked with the real tools: `helm lint --strict` and `helm template` for
// each values file in charts/gatehouse/ci, the rendered manifests validated against the Kubernetes schemas by
// kubernetes-validate (PyPI), and the rendered YAML read back to assert what the chart promises: sidecar and
// standalone shapes, hardening, probes, secrets only by reference, a gateway config that Gatehouse's own
// loader accepts, NetworkPolicy, PDB, HPA, ServiceMonitor and the Grafana dashboard.
// helm and kubernetes-validate are required: a missing tool fails these tests (CI installs both).

import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { helmBinary, runs } from '../helpers/helm.js';
import { mtlsCertificates } from '../helpers/redis.js';
import { parseConfigText } from '../../src/config/load.js';
import { unsupportedFeatures } from '../../src/config/semantic-checks.js';
import type { GatehouseConfig } from '../../src/config/types.js';
import { compileHostOriginGuard, type GuardVerdict } from '../../src/edge/origin-guard.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CHART = join(ROOT, 'charts/gatehouse');
const VALUES = {
  sidecar: join(CHART, 'ci/sidecar-values.yaml'),
  standalone: join(CHART, 'ci/standalone-values.yaml'),
  everything: join(CHART, 'ci/everything-values.yaml'),
  persistent: join(CHART, 'ci/persistent-values.yaml'),
} as const;
type ValuesName = keyof typeof VALUES;
const VALUES_NAMES = Object.keys(VALUES) as ValuesName[];
const NAMESPACE = 'gatehouse-test';
// kubernetes-validate 1.37.0 ships schemas for Kubernetes 1.25 through 1.37: check the oldest and the newest.
const KUBERNETES_VERSIONS = ['1.25.0', '1.37.0'];
// helm's default Kubernetes version (.Capabilities.KubeVersion) comes from its release build's flags; one built
// with `go install` says 1.20. Every helm call here names the version instead.
const NEWEST = '1.37.0';
const KUBE_VERSION = ['--kube-version', NEWEST];
const SECRETS_DIR = '/etc/gatehouse-secrets';

const work = mkdtempSync(join(tmpdir(), 'gatehouse-chart-'));
after(() => rmSync(work, { recursive: true, force: true }));

// ---- Tools -------------------------------------------------------------------------------------------------

/** `python3 -m kubernetes_validate`, else the `kubernetes-validate` script; throws when neither runs. */
function findKubernetesValidate(): string[] {
  if (runs('python3', ['-m', 'kubernetes_validate', '--version'])) return ['python3', '-m', 'kubernetes_validate'];
  if (runs('kubernetes-validate', ['--version'])) return ['kubernetes-validate'];
  throw new Error('kubernetes-validate not found; install it with: python3 -m pip install kubernetes-validate');
}

const helm = helmBinary;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: ROOT, timeout: 120_000, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** `helm template` that must fail; its stderr. */
async function failing(values: ValuesName, set: string[]): Promise<string> {
  const r = await run(helm(), ['template', 'gh', CHART, ...KUBE_VERSION, '-f', VALUES[values], ...set.flatMap((s) => ['--set', s])]);
  assert.notEqual(r.code, 0, `helm template ${set.join(' ')} should fail`);
  return r.stderr;
}

// ---- Rendering ---------------------------------------------------------------------------------------------

// Manifests are navigated freely; the assertions check the shapes.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Manifest = Record<string, any>;

interface Rendered {
  text: string;
  docs: Manifest[];
}

const renderCache = new Map<string, Promise<Rendered>>();

/**
 * `helm template` with the given values file and `--set` overrides, for a cluster of `kubeVersion`; fails the
 * test when helm fails.
 */
function render(values: ValuesName, set: string[] = [], chart = CHART, kubeVersion = NEWEST): Promise<Rendered> {
  const key = JSON.stringify([values, set, chart, kubeVersion]);
  let cached = renderCache.get(key);
  if (cached === undefined) {
    cached = (async () => {
      const args = ['template', 'gh', chart, '--kube-version', kubeVersion, '--namespace', NAMESPACE, '-f', VALUES[values], ...set.flatMap((s) => ['--set', s])];
      const r = await run(helm(), args);
      assert.equal(r.code, 0, `helm ${args.join(' ')} failed:\n${r.stderr}`);
      const docs = parseAllDocuments(r.stdout).map((d) => {
        assert.deepEqual(d.errors, [], 'helm template printed invalid YAML');
        return d.toJS() as Manifest | null;
      });
      return { text: r.stdout, docs: docs.filter((d): d is Manifest => d !== null) };
    })();
    renderCache.set(key, cached);
  }
  return cached;
}

function kinds(docs: Manifest[], kind: string): Manifest[] {
  return docs.filter((d) => d['kind'] === kind);
}

function one(docs: Manifest[], kind: string, name?: string): Manifest {
  const found = kinds(docs, kind).filter((d) => name === undefined || d['metadata']['name'] === name);
  assert.equal(found.length, 1, `expected one ${kind}${name ? ` named ${name}` : ''}, found ${found.length}`);
  return found[0] as Manifest;
}

const deployment = (docs: Manifest[]): Manifest => one(docs, 'Deployment');
/** The chart's Service for MCP clients (and metrics); the admin API's, when on, is `<fullname>-admin`. */
function mcpService(docs: Manifest[]): Manifest {
  const found = kinds(docs, 'Service').filter((d) => !(d['metadata']['name'] as string).endsWith('-admin'));
  assert.equal(found.length, 1, `expected one MCP Service, found ${found.length}`);
  return found[0] as Manifest;
}
const podSpec = (docs: Manifest[]): Manifest => deployment(docs)['spec']['template']['spec'];
function container(docs: Manifest[], name: string): Manifest {
  const c = (podSpec(docs)['containers'] as Manifest[]).find((x) => x['name'] === name);
  assert.ok(c, `no container named ${name}`);
  return c;
}

/** The gateway config text from the chart's ConfigMap (the one that holds gatehouse.yaml). */
function configText(docs: Manifest[]): string {
  const cms = kinds(docs, 'ConfigMap').filter((cm) => typeof cm['data']?.['gatehouse.yaml'] === 'string');
  assert.equal(cms.length, 1, 'expected one ConfigMap with gatehouse.yaml');
  return cms[0]?.['data']['gatehouse.yaml'] as string;
}

function configObject(docs: Manifest[]): Manifest {
  return parse(configText(docs)) as Manifest;
}

// ---- Secrets in the rendered config ------------------------------------------------------------------------

let pems: ReturnType<typeof mtlsCertificates> | undefined;

/** A plausible value for a secret, by what it holds (the config schema checks hashes and URLs, and store.tls PEMs). */
function fakeSecret(name: string): string {
  const n = name.toLowerCase();
  if (/\.(crt|key)$/.test(n)) {
    pems ??= mtlsCertificates();
    const pem = ({ 'ca.crt': pems.ca, 'tls.crt': pems.client.cert, 'tls.key': pems.client.key } as Record<string, string>)[n];
    if (pem !== undefined) return pem;
  }
  if (n.endsWith('hash')) return `sha256:${'ab'.repeat(32)}`;
  if (n.includes('jwks')) return 'https://auth.example.com/.well-known/jwks.json';
  if (n.includes('issuer')) return 'https://auth.example.com';
  if (n.includes('store_url') || n.includes('redis')) return 'rediss://:s3cr3t-redis@redis.example:6379';
  if (n.includes('request-state') || n.includes('request_state')) return `fake-request-state-key-${'k'.repeat(32)}`;
  return `fake-secret-${n.replace(/[^a-z0-9]/g, '-')}`;
}

interface Interpolated {
  config: GatehouseConfig;
  env: Record<string, string>;
  files: Record<string, string>;
}

/**
 * Loads the rendered config the way Gatehouse does in the pod: every ${env:NAME} gets a value in the env
 * handed to the loader, every ${file:/etc/gatehouse-secrets/...} a file (the mount prefix is pointed at a
 * temporary directory, since the pod's paths do not exist here).
 */
function loadRendered(docs: Manifest[], label: string, given: Record<string, string> = {}): Interpolated {
  const text = configText(docs);
  const env: Record<string, string> = {};
  for (const m of text.matchAll(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g)) env[m[1] as string] = given[m[1] as string] ?? fakeSecret(m[1] as string);
  const dir = mkdtempSync(join(work, `${label}-secrets-`));
  const files: Record<string, string> = {};
  for (const m of text.matchAll(/\$\{file:([^}]+)\}/g)) {
    const path = m[1] as string;
    assert.ok(path.startsWith(`${SECRETS_DIR}/`), `file reference outside ${SECRETS_DIR}: ${path}`);
    const local = join(dir, path.slice(SECRETS_DIR.length + 1));
    mkdirSync(join(local, '..'), { recursive: true });
    files[path] = fakeSecret(path.split('/').pop() ?? path);
    writeFileSync(local, `${files[path]}\n`);
  }
  const localText = text.split(`\${file:${SECRETS_DIR}/`).join(`\${file:${dir}/`);
  const config = parseConfigText(localText, { fileName: `${label}/gatehouse.yaml`, baseDir: dir, env });
  return { config, env, files };
}

// ---- helm lint ---------------------------------------------------------------------------------------------

describe('helm lint --strict', () => {
  for (const name of VALUES_NAMES) {
    test(`passes with ci/${name}-values.yaml`, async () => {
      const r = await run(helm(), ['lint', '--strict', ...KUBE_VERSION, CHART, '-f', VALUES[name]]);
      const out = r.stdout + r.stderr;
      assert.equal(r.code, 0, out);
      assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
      assert.doesNotMatch(out, /\[(ERROR|WARNING)\]/, out);
      // Lint runs templates in a mode where `fail` only logs; a fail message here means broken values.
      assert.doesNotMatch(out, /Fail:/, out);
    });
  }
});

// ---- Kubernetes schemas ------------------------------------------------------------------------------------

describe('kubernetes-validate', () => {
  // Each version's schemas judge what the chart renders for that version (.Capabilities.KubeVersion): the
  // helm test pod uses a native sidecar only where the cluster has them (1.29 and later).
  test('every rendered manifest passes the Kubernetes schemas (strict), ServiceMonitor skipped as a CRD', async () => {
    const kv = findKubernetesValidate();
    for (const version of KUBERNETES_VERSIONS) {
      const files: string[] = [];
      const expected: string[] = [];
      for (const name of VALUES_NAMES) {
        const { text, docs } = await render(name, [], CHART, version);
        const file = join(work, `${name}-${version}.yaml`);
        writeFileSync(file, text);
        files.push(file);
        for (const d of docs) if (d['kind'] !== 'ServiceMonitor') expected.push(`${file}|${String(d['kind']).toLowerCase()}/${d['metadata']['name']}`);
      }
      const r = await run(kv[0] as string, [...kv.slice(1), '--strict', '-k', version, ...files]);
      const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
      assert.equal(r.code, 0, `kubernetes-validate failed:\n${r.stdout}${r.stderr}`);
      assert.deepEqual(lines.filter((l) => /^(ERROR|FATAL)/.test(l)), []);
      // A kind without a schema (a CRD) is only warned about; the one such kind here is the ServiceMonitor.
      for (const w of lines.filter((l) => l.startsWith('WARN'))) assert.match(w, /kind ServiceMonitor with api version monitoring\.coreos\.com\/v1/);
      const mm = version.split('.').slice(0, 2).join('.');
      for (const e of expected) {
        const [file, resource] = e.split('|');
        assert.ok(lines.includes(`INFO ${file} passed for resource ${resource} against version ${mm}`), `no pass for ${resource} in ${file} against ${mm}:\n${r.stdout}`);
      }
    }
  });

  test('the validator does reject a bad manifest (the check above can fail)', async () => {
    const kv = findKubernetesValidate();
    const { docs } = await render('sidecar');
    const bad = structuredClone(deployment(docs));
    bad['spec']['template']['spec']['containers'][0]['securityContext']['readOnlyRootFilsystem'] = true;
    const file = join(work, 'bad.yaml');
    writeFileSync(file, JSON.stringify(bad));
    const r = await run(kv[0] as string, [...kv.slice(1), '--strict', '-k', '1.37.0', file]);
    assert.notEqual(r.code, 0);
    assert.match(r.stdout, /ERROR .*readOnlyRootFilsystem/);
  });
});

// ---- Modes -------------------------------------------------------------------------------------------------

describe('sidecar mode', () => {
  test('one Deployment, Gatehouse and the MCP server side by side', async () => {
    const { docs } = await render('sidecar');
    const spec = podSpec(docs);
    assert.deepEqual((spec['containers'] as Manifest[]).map((c) => c['name']), ['gatehouse', 'mcp-server']);
    const server = container(docs, 'mcp-server');
    assert.equal(server['image'], 'ghcr.io/example/crm-mcp:1.4.2');
    assert.deepEqual(server['args'], ['--transport', 'http', '--host', '127.0.0.1', '--port', '3001']);
    assert.deepEqual(server['env'], [{ name: 'CRM_BASE_URL', value: 'https://crm.internal.example.com' }]);
    assert.deepEqual(server['ports'], [{ name: 'mcp-server', containerPort: 3001, protocol: 'TCP' }]);
    assert.equal(container(docs, 'gatehouse')['image'], 'registry.example.com/platform/gatehouse:0.1.0');
  });

  test("server.name cannot be a name the chart gives a container of the same pod: the API server refuses the pod", async () => {
    // Container names are unique across a pod's containers and init containers: `gatehouse` in the Deployment,
    // `doctor` in the helm test pod, where the server runs too.
    for (const name of ['gatehouse', 'doctor']) {
      for (const native of ['false', 'true']) {
        assert.match(await failing('sidecar', [`server.name=${name}`, `server.nativeSidecar=${native}`]), new RegExp(`server\\.name "${name}" is the name of the chart's own container`), `${name} nativeSidecar=${native}`);
      }
    }
    const { docs } = await render('sidecar', ['server.name=crm']);
    assert.deepEqual((podSpec(docs)['containers'] as Manifest[]).map((c) => c['name']), ['gatehouse', 'crm']);
  });

  test('the upstream is the server on 127.0.0.1 in the same pod', async () => {
    const { docs } = await render('sidecar');
    const config = configObject(docs);
    assert.deepEqual(config['upstreams'], [{ name: 'crm', url: 'http://127.0.0.1:3001/mcp', era: 'auto' }]);
  });

  test('the Service keeps a client on the pod that holds its legacy session (ClientIP) unless told not to', async () => {
    const svc = mcpService((await render('sidecar')).docs);
    assert.equal(svc['spec']['sessionAffinity'], 'ClientIP');
    assert.deepEqual(svc['spec']['sessionAffinityConfig'], { clientIP: { timeoutSeconds: 3600 } });
    const balanced = mcpService((await render('sidecar', ['service.sessionAffinity=None'])).docs);
    assert.equal(balanced['spec']['sessionAffinity'], 'None');
    assert.equal(balanced['spec']['sessionAffinityConfig'], undefined);
    assert.equal(mcpService((await render('sidecar', ['service.sessionAffinityTimeoutSeconds=600'])).docs)['spec']['sessionAffinityConfig']['clientIP']['timeoutSeconds'], 600);
  });

  test("the Service exposes Gatehouse's ports only, never the server's", async () => {
    const { docs } = await render('sidecar');
    const svc = mcpService(docs);
    assert.deepEqual(svc['spec']['ports'], [
      { name: 'mcp', port: 8080, targetPort: 'mcp', protocol: 'TCP' },
      { name: 'metrics', port: 9464, targetPort: 'metrics', protocol: 'TCP' },
    ]);
    assert.deepEqual(svc['spec']['selector'], deployment(docs)['spec']['selector']['matchLabels']);
  });
});

describe('sidecar mode, server.nativeSidecar', () => {
  // Probes and an egress proxy set so that every part of the server container is compared across layouts.
  const SET = ['server.startupProbe.tcpSocket.port=3001', 'server.readinessProbe.tcpSocket.port=3001', 'server.livenessProbe.tcpSocket.port=3001', 'egressProxy.enabled=true', 'server.volumeMounts[0].name=extra', 'server.volumeMounts[0].mountPath=/cache', 'extraVolumes[0].name=extra', 'extraVolumes[0].emptyDir.sizeLimit=1Mi'];

  test('off (the default): the server is an ordinary container beside Gatehouse and there are no init containers', async () => {
    const { docs } = await render('sidecar', SET);
    assert.equal(podSpec(docs)['initContainers'], undefined);
    assert.deepEqual((podSpec(docs)['containers'] as Manifest[]).map((c) => c['name']), ['gatehouse', 'mcp-server']);
    assert.equal(container(docs, 'mcp-server')['restartPolicy'], undefined);
  });

  test('on: the server is an init container with restartPolicy Always (started before Gatehouse, stopped after it), the same server as before', async () => {
    const off = await render('sidecar', SET);
    const on = await render('sidecar', [...SET, 'server.nativeSidecar=true']);
    const spec = podSpec(on.docs);
    assert.deepEqual((spec['containers'] as Manifest[]).map((c) => c['name']), ['gatehouse']);
    assert.equal(spec['initContainers'].length, 1);
    const native = spec['initContainers'][0] as Manifest;
    assert.equal(native['restartPolicy'], 'Always');
    const { restartPolicy: _, ...rest } = native;
    // Image, args, env (with the egress proxy's), ports, probes, securityContext, resources and mounts unchanged.
    assert.deepEqual(rest, container(off.docs, 'mcp-server'));
    assert.deepEqual(native['startupProbe'], { tcpSocket: { port: 3001 } });
    // Gatehouse still reaches it on the pod's loopback at the same port, with the same config and volumes.
    assert.deepEqual(configObject(on.docs)['upstreams'], [{ name: 'crm', url: 'http://127.0.0.1:3001/mcp', era: 'auto', egressProxyToken: '${env:GATEHOUSE_EGRESS_PROXY_TOKEN}' }]);
    assert.deepEqual(native['ports'], [{ name: 'mcp-server', containerPort: 3001, protocol: 'TCP' }]);
    assert.equal(configText(on.docs), configText(off.docs));
    assert.deepEqual(spec['volumes'], podSpec(off.docs)['volumes']);
    assert.deepEqual(container(on.docs, 'gatehouse'), container(off.docs, 'gatehouse'));
  });

  test('on: the Deployment passes the Kubernetes schemas of 1.29 and 1.37 (strict)', async () => {
    const kv = findKubernetesValidate();
    for (const version of ['1.29.0', NEWEST]) {
      const { docs } = await render('sidecar', [...SET, 'server.nativeSidecar=true'], CHART, version);
      const file = join(work, `native-sidecar-${version}.yaml`);
      writeFileSync(file, JSON.stringify(deployment(docs)));
      const r = await run(kv[0] as string, [...kv.slice(1), '--strict', '-k', version, file]);
      assert.equal(r.code, 0, `kubernetes-validate failed:\n${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /passed for resource deployment\/gh-gatehouse/);
    }
  });

  test('on, before Kubernetes 1.29: the render fails (an older API server drops restartPolicy and the pod would never start)', async () => {
    const r = await run(helm(), ['template', 'gh', CHART, '--kube-version', '1.28.0', '-f', VALUES.sidecar, '--set', 'server.nativeSidecar=true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /server\.nativeSidecar needs Kubernetes 1\.29 or later/);
    // Standalone runs no server: the value is ignored there.
    const standalone = await render('standalone', ['server.nativeSidecar=true'], CHART, '1.28.0');
    assert.equal(podSpec(standalone.docs)['initContainers'], undefined);
  });
});

describe('standalone mode', () => {
  test('Gatehouse alone, in front of the existing Service URL', async () => {
    const { docs } = await render('standalone');
    assert.deepEqual((podSpec(docs)['containers'] as Manifest[]).map((c) => c['name']), ['gatehouse']);
    assert.equal(deployment(docs)['spec']['replicas'], 3);
    const [upstream] = configObject(docs)['upstreams'] as Manifest[];
    assert.equal(upstream?.['url'], 'http://search-mcp.tools.svc.cluster.local:8000/mcp');
    assert.equal(upstream?.['name'], 'search');
    assert.deepEqual(upstream?.['headers'], { Authorization: 'Bearer ${env:GATEHOUSE_UPSTREAM_HEADER_AUTHORIZATION}', 'X-Team': 'platform' });
    assert.equal(deployment(docs)['metadata']['labels']['gatehouse.dev/mode'], 'standalone');
  });
});

// ---- Pod hardening and probes ------------------------------------------------------------------------------

const HARDENED = {
  runAsNonRoot: true,
  runAsUser: 1000,
  readOnlyRootFilesystem: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

describe('pod', () => {
  for (const name of VALUES_NAMES) {
    test(`${name}: securityContext is hardened for the pod and every container`, async () => {
      const { docs } = await render(name);
      const spec = podSpec(docs);
      assert.equal(spec['securityContext']['runAsNonRoot'], true);
      assert.equal(spec['securityContext']['runAsUser'], 1000);
      assert.deepEqual(spec['securityContext']['seccompProfile'], { type: 'RuntimeDefault' });
      assert.equal(spec['automountServiceAccountToken'], false);
      for (const c of spec['containers'] as Manifest[]) {
        for (const [key, value] of Object.entries(HARDENED)) assert.deepEqual(c['securityContext'][key], value, `${c['name']}.securityContext.${key}`);
      }
    });

    test(`${name}: writable volumes at /data (an emptyDir, or the store's claim) and /tmp, config mounted as a directory`, async () => {
      const { docs } = await render(name);
      const spec = podSpec(docs);
      const volumes = new Map((spec['volumes'] as Manifest[]).map((v) => [v['name'], v]));
      const mounts = new Map((container(docs, 'gatehouse')['volumeMounts'] as Manifest[]).map((m) => [m['mountPath'], m]));
      for (const path of ['/data', '/tmp']) {
        const mount = mounts.get(path);
        assert.ok(mount, `no mount at ${path}`);
        const volume = volumes.get(mount['name']);
        if (path === '/data' && name === 'persistent') assert.ok(volume?.['persistentVolumeClaim'], '/data is the store claim');
        else assert.ok(volume?.['emptyDir'], `${path} is not an emptyDir`);
        assert.notEqual(mount['readOnly'], true);
      }
      const configMount = mounts.get('/etc/gatehouse');
      assert.ok(configMount);
      // No subPath: the kubelet's ConfigMap updates reach the file only for a directory mount (hot reload).
      assert.equal(configMount['subPath'], undefined);
      assert.equal(volumes.get(configMount['name'])?.['configMap']?.['name'], mcpService(docs)['metadata']['name']);
      const gh = container(docs, 'gatehouse');
      assert.deepEqual(gh['args'], ['serve', '--config', '/etc/gatehouse/gatehouse.yaml']);
      assert.ok((gh['env'] as Manifest[]).some((e) => e['name'] === 'GATEHOUSE_CONFIG' && e['value'] === '/etc/gatehouse/gatehouse.yaml'));
      if (podSpec(docs)['containers'].length > 1) {
        const serverMounts = container(docs, podSpec(docs)['containers'][1]['name'])['volumeMounts'] as Manifest[];
        assert.ok(serverMounts.some((m) => m['mountPath'] === '/tmp' && volumes.get(m['name'])?.['emptyDir']), 'server container has no writable /tmp');
      }
    });

    test(`${name}: liveness on /healthz, readiness on /readyz, both on the MCP port; resources set`, async () => {
      const { docs } = await render(name);
      const gh = container(docs, 'gatehouse');
      assert.deepEqual(gh['livenessProbe']['httpGet'], { path: '/healthz', port: 'mcp' });
      assert.equal(gh['readinessProbe']['httpGet']['path'], '/readyz');
      assert.equal(gh['readinessProbe']['httpGet']['port'], 'mcp');
      const mcpPort = (gh['ports'] as Manifest[]).find((p) => p['name'] === 'mcp');
      assert.equal(mcpPort?.['containerPort'], configObject(docs)['listen']['port']);
      assert.ok(gh['resources']['requests']['cpu']);
      assert.ok(gh['resources']['limits']['memory']);
    });

    test(`${name}: the readiness probe's Host passes Gatehouse's Host check (/readyz answers 403 to any other)`, async () => {
      const { docs } = await render(name);
      assert.equal(probeVerdict(docs).ok, true, JSON.stringify(probeVerdict(docs)));
    });
  }

  test('with allowedHosts (in listen or in extraConfig) the readiness probe names an allowed host, not the pod IP', async () => {
    for (const set of [['listen.allowedHosts[0]=mcp.example.com'], ['extraConfig.listen.allowedHosts[0]=Mcp.Example.com']]) {
      const { docs } = await render('sidecar', set);
      assert.deepEqual(probeVerdict(docs), { ok: true }, set.join());
      assert.deepEqual(container(docs, 'gatehouse')['readinessProbe']['httpGet']['httpHeaders'], [{ name: 'Host', value: set[0]!.split('=')[1] }]);
    }
    // '*' lets any Host in: the kubelet's own is left.
    const any = await render('sidecar', ['listen.allowedHosts[0]=*']);
    assert.equal(container(any.docs, 'gatehouse')['readinessProbe']['httpGet']['httpHeaders'], undefined);
  });
});

/**
 * What Gatehouse's Host/Origin guard says to the kubelet's readiness probe: the kubelet sends the probe's
 * Host header if it names one, else the pod IP and port.
 */
function probeVerdict(docs: Manifest[]): GuardVerdict {
  const { config } = loadRendered(docs, 'probe-host');
  const httpGet = container(docs, 'gatehouse')['readinessProbe']['httpGet'] as Manifest;
  const named = ((httpGet['httpHeaders'] ?? []) as Manifest[]).find((h) => String(h['name']).toLowerCase() === 'host');
  const host = named === undefined ? `10.244.1.7:${config.listen.port}` : String(named['value']);
  return compileHostOriginGuard(config.listen, false)({ host });
}

// ---- The gateway config ------------------------------------------------------------------------------------

describe('gateway config', () => {
  for (const name of VALUES_NAMES) {
    test(`${name}: parses and is accepted by Gatehouse's own loader`, async () => {
      const { docs } = await render(name);
      const { config } = loadRendered(docs, name);
      assert.equal(config.listen.host, '0.0.0.0');
      assert.equal(config.listen.publicUrl, (parse(readFileSync(VALUES[name], 'utf8')) as Manifest)['listen']['publicUrl']);
      assert.deepEqual(config.metrics, { enabled: true, host: '0.0.0.0', port: 9464, path: '/metrics' });
      assert.deepEqual(unsupportedFeatures(config), []);
    });
  }

  test("the upstream's timeouts reach the config, callMs (the maximum for any answer) and the limits per tool included", async () => {
    const { docs } = await render('standalone', ['upstream.timeouts.callMs=600000', 'upstream.timeouts.bodyMs=30000', 'upstream.timeouts.tools.build=3600000']);
    const { config } = loadRendered(docs, 'timeouts');
    const up = config.upstreams[0] as unknown as { timeouts: Record<string, unknown> };
    assert.deepEqual(up.timeouts, { connectMs: 2000, headersMs: 60000, bodyMs: 30000, pingMs: 30000, callMs: 600000, tools: { build: 3600000 } });
  });

  test("auth.oauth takes every setting of the config's oauth, the token checks RFC 9068 and introspection's audience among them", async () => {
    // auth.oauth is copied into the config (strings through the Secret references), so the chart's schema must not
    // refuse what the config takes: a key it lacks could not be set, requireAccessTokenType (which keeps an ID
    // token from passing as an access token) among them.
    const config = JSON.parse(readFileSync(join(ROOT, 'config/gatehouse.schema.json'), 'utf8')) as Manifest;
    const chart = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Manifest;
    const oauth = config['definitions']['oauth'];
    const chartOauth = chart['properties']['auth']['properties']['oauth'];
    assert.deepEqual(Object.keys(chartOauth['properties']).sort(), Object.keys(oauth['properties']).sort());
    assert.deepEqual(Object.keys(chartOauth['properties']['introspection']['properties']).sort(), Object.keys(oauth['properties']['introspection']['properties']).sort());
    // And they land in the config as given.
    const introspection = ['auth.oauth.introspection.url=https://auth.example.com/introspect', 'auth.oauth.introspection.clientId=gatehouse', 'auth.oauth.introspection.clientSecret.secretKeyRef.name=gatehouse-oauth', 'auth.oauth.introspection.clientSecret.secretKeyRef.key=introspection-secret'];
    const { docs } = await render('standalone', ['auth.oauth.requireAccessTokenType=true', ...introspection, 'auth.oauth.introspection.acceptMissingAudience=true']);
    const { config: loaded } = loadRendered(docs, 'oauth-checks');
    assert.equal(loaded.auth.oauth?.requireAccessTokenType, true);
    assert.equal(loaded.auth.oauth?.introspection?.acceptMissingAudience, true);
    // What the config requires of introspection, the chart does too: without it the render passed and every start failed.
    assert.deepEqual(chartOauth['properties']['introspection']['required'], oauth['properties']['introspection']['required']);
    assert.match(await failing('standalone', ['auth.oauth.introspection.url=https://auth.example.com/introspect']), /introspection.*clientId/);
  });

  test("the upstream's transport (an HTTP+SSE server), pool, message size, session cap and URI prefixes reach the config", async () => {
    const { docs } = await render('standalone', ['upstream.transport=sse', 'upstream.timeouts.pingMs=15000', 'upstream.pool.connections=8', 'upstream.pool.keepAliveTimeoutMs=5000', 'upstream.maxMessageBytes=1048576', 'upstream.maxSessions=8', 'upstream.uriPrefixes[0]=search://']);
    const { config } = loadRendered(docs, 'upstream-extra');
    const up = config.upstreams[0] as unknown as Manifest;
    assert.equal(up['transport'], 'sse');
    assert.equal(up['timeouts']['pingMs'], 15000);
    assert.deepEqual(up['pool'], { connections: 8, keepAliveTimeoutMs: 5000 });
    assert.equal(up['maxMessageBytes'], 1048576);
    assert.equal(up['maxSessions'], 8);
    assert.deepEqual(up['uriPrefixes'], ['search://']);
    // Unset, they are left out and Gatehouse's defaults apply.
    assert.deepEqual(Object.keys(configObject((await render('sidecar')).docs)['upstreams'][0]).sort(), ['era', 'name', 'url']);
    // Gatehouse refuses 0 (undici takes no 0 keep-alive), so the chart's schema does too, before anything is installed.
    assert.match(await failing('standalone', ['upstream.pool.keepAliveTimeoutMs=0']), /keepAliveTimeoutMs/);
  });

  test('metrics are off in the config when the values turn them off', async () => {
    const { docs } = await render('sidecar', ['metrics.enabled=false']);
    assert.deepEqual(configObject(docs)['metrics'], { enabled: false });
    assert.deepEqual(loadRendered(docs, 'no-metrics').config.metrics, { enabled: false, host: '127.0.0.1', port: 9464, path: '/metrics' });
    assert.deepEqual(unsupportedFeatures(loadRendered(docs, 'no-metrics').config), []);
    assert.deepEqual((mcpService(docs)['spec']['ports'] as Manifest[]).map((p) => p['name']), ['mcp']);
    assert.equal((container(docs, 'gatehouse')['ports'] as Manifest[]).length, 1);
  });

  test('everything: OAuth, introspection, client credentials, Redis and extra config all land in the config', async () => {
    const { docs } = await render('everything');
    const { config, env, files } = loadRendered(docs, 'everything-detail');
    assert.equal(config.auth.oauth?.audience, 'https://files.mcp.example.com/mcp');
    assert.equal(config.auth.oauth?.jwksUri, env['GATEHOUSE_OAUTH_JWKS_URI']);
    assert.equal(config.auth.oauth?.introspection?.clientSecret, files[`${SECRETS_DIR}/gatehouse-oauth-introspection/client-secret`]);
    assert.equal(config.store.kind, 'redis');
    assert.ok(config.store.kind === 'redis');
    assert.equal(config.store.url, env['GATEHOUSE_STORE_URL']);
    assert.equal(config.store.keyPrefix, 'files-gw:');
    assert.deepEqual(config.store.sentinel, { name: 'gatehouse', nodes: ['redis-sentinel-0.redis-sentinel:26379', 'redis-sentinel-1.redis-sentinel:26379'], password: env['GATEHOUSE_STORE_SENTINEL_PASSWORD'] });
    assert.equal(config.store.tls?.ca, files[`${SECRETS_DIR}/gatehouse-redis-tls/ca.crt`]);
    assert.equal(config.store.tls?.cert, files[`${SECRETS_DIR}/gatehouse-redis-tls/tls.crt`]);
    assert.equal(config.store.tls?.key, files[`${SECRETS_DIR}/gatehouse-redis-tls/tls.key`]);
    assert.equal(config.store.tls?.servername, 'redis.internal.example.com');
    assert.deepEqual(unsupportedFeatures(config), []);
    assert.deepEqual(config.upstreams.map((u) => u.name), ['files', 'wiki']);
    assert.equal(config.listen.maxBodyBytes, 2097152);
    assert.equal(config.listen.port, 8443);
    assert.equal(config.tools.naming.prefix, 'always');
    assert.equal(config.shutdown.graceMs, 20000);
    const raw = configObject(docs);
    assert.equal(raw['upstreams'][0]['headers']['Authorization'], `Bearer \${file:${SECRETS_DIR}/files-upstream/bearer}`);
    assert.equal(raw['upstreams'][0]['url'], 'http://127.0.0.1:3100/mcp');
  });

  test('the sqlite store lives in the writable /data volume, an emptyDir unless persistence is on', async () => {
    const { docs } = await render('sidecar');
    assert.deepEqual(configObject(docs)['store'], { kind: 'sqlite', path: '/data/gatehouse.db' });
    const data = (podSpec(docs)['volumes'] as Manifest[]).find((v) => v['name'] === 'data');
    assert.deepEqual(data, { name: 'data', emptyDir: { sizeLimit: '1Gi' } });
    assert.equal(kinds(docs, 'PersistentVolumeClaim').length, 0);
    assert.equal(deployment(docs)['spec']['strategy'], undefined);
  });

  test('persistent: SQLite on a PersistentVolumeClaim, kept on uninstall, one pod replaced by Recreate', async () => {
    const { docs } = await render('persistent');
    const pvc = one(docs, 'PersistentVolumeClaim');
    assert.equal(pvc['metadata']['name'], 'gh-gatehouse-data');
    assert.equal(pvc['metadata']['annotations']['helm.sh/resource-policy'], 'keep');
    assert.deepEqual(pvc['spec'], { accessModes: ['ReadWriteOnce'], storageClassName: 'standard', resources: { requests: { storage: '5Gi' } } });
    const data = (podSpec(docs)['volumes'] as Manifest[]).find((v) => v['name'] === 'data');
    assert.deepEqual(data, { name: 'data', persistentVolumeClaim: { claimName: 'gh-gatehouse-data' } });
    assert.deepEqual(
      (container(docs, 'gatehouse')['volumeMounts'] as Manifest[]).find((m) => m['name'] === 'data'),
      { name: 'data', mountPath: '/data' },
    );
    assert.equal(deployment(docs)['spec']['replicas'], 1);
    assert.deepEqual(deployment(docs)['spec']['strategy'], { type: 'Recreate' });
    assert.deepEqual(configObject(docs)['store'], { kind: 'sqlite', path: '/data/gatehouse.db' });
    const existing = await render('persistent', ['store.persistence.existingClaim=notes-state']);
    assert.equal(kinds(existing.docs, 'PersistentVolumeClaim').length, 0, 'an existing claim is used, not created');
    assert.deepEqual((podSpec(existing.docs)['volumes'] as Manifest[]).find((v) => v['name'] === 'data'), { name: 'data', persistentVolumeClaim: { claimName: 'notes-state' } });
    const defaultClass = await render('persistent', ['store.persistence.storageClassName=null']);
    assert.equal(one(defaultClass.docs, 'PersistentVolumeClaim')['spec']['storageClassName'], undefined, 'null leaves the default StorageClass');
  });

  test('egressProxy (sidecar): the server container gets HTTP_PROXY to Gatehouse on loopback, the config turns the proxy on', async () => {
    const { docs } = await render('sidecar', ['egressProxy.enabled=true', 'egressProxy.port=3129']);
    const env = container(docs, 'mcp-server')['env'] as Manifest[];
    const byName = new Map(env.map((e) => [e['name'], e['value']]));
    // With the sidecar upstream's name and its egressProxyToken (the kubelet expands $(…)): see "egress proxy credentials".
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']) assert.equal(byName.get(name), 'http://crm:$(GATEHOUSE_EGRESS_PROXY_TOKEN)@127.0.0.1:3129', name);
    assert.equal(byName.get('NO_PROXY'), '');
    assert.equal(byName.get('CRM_BASE_URL'), 'https://crm.internal.example.com', 'the server\'s own env stays');
    assert.deepEqual(configObject(docs)['policy']['egressProxy'], { enabled: true, host: '127.0.0.1', port: 3129 });
    const { config } = loadRendered(docs, 'egress-proxy');
    assert.equal(config.policy.egressProxy.enabled, true);
    const off = await render('sidecar');
    assert.equal(((container(off.docs, 'mcp-server')['env'] as Manifest[]) ?? []).some((e) => e['name'] === 'HTTP_PROXY'), false);
  });

  test('tracing: the values become the config\'s tracing, a header from a Secret as an env reference; off by default', async () => {
    const { docs } = await render('standalone', ['tracing.enabled=true', 'tracing.endpoint=http://otel-collector.observability:4318/v1/traces', 'tracing.headers.x-api-key.secretKeyRef.name=otel', 'tracing.headers.x-api-key.secretKeyRef.key=api-key', 'tracing.resourceAttributes.deployment\\.environment\\.name=prod']);
    assert.deepEqual(configObject(docs)['tracing'], {
      enabled: true,
      sampleRatio: 1,
      endpoint: 'http://otel-collector.observability:4318/v1/traces',
      headers: { 'x-api-key': '${env:GATEHOUSE_TRACING_HEADER_X_API_KEY}' },
      resourceAttributes: { 'deployment.environment.name': 'prod' },
    });
    const env = (container(docs, 'gatehouse')['env'] as Manifest[]).find((e) => e['name'] === 'GATEHOUSE_TRACING_HEADER_X_API_KEY');
    assert.deepEqual(env, { name: 'GATEHOUSE_TRACING_HEADER_X_API_KEY', valueFrom: { secretKeyRef: { name: 'otel', key: 'api-key' } } });
    const { config } = loadRendered(docs, 'tracing');
    assert.equal(config.tracing.enabled, true);
    assert.equal(configObject((await render('standalone')).docs)['tracing'], undefined);
  });

  test('Redis: the URL comes from an existing Secret as an env var, never into the ConfigMap', async () => {
    const { docs } = await render('everything');
    assert.equal(configObject(docs)['store']['url'], '${env:GATEHOUSE_STORE_URL}');
    const env = (container(docs, 'gatehouse')['env'] as Manifest[]).find((e) => e['name'] === 'GATEHOUSE_STORE_URL');
    assert.deepEqual(env, { name: 'GATEHOUSE_STORE_URL', valueFrom: { secretKeyRef: { name: 'gatehouse-redis', key: 'url' } } });
    assert.equal(kinds(docs, 'PersistentVolumeClaim').length, 0);
  });

  test("Redis through Sentinel: the sentinels' own password (store.sentinel.password) comes from a Secret, never in clear", async () => {
    // Sentinels that require a password (Bitnami's redis chart with Sentinel does by default) answer NOAUTH without it,
    // and the store never finds its primary.
    // ci/everything-values.yaml gives it with secretKeyRef; the same with secretFile.
    const redis = ['store.kind=redis', 'store.url.secretKeyRef.name=gatehouse-redis', 'store.url.secretKeyRef.key=url', 'store.sentinel.name=gatehouse', 'store.sentinel.nodes[0]=redis-sentinel-0.redis-sentinel:26379'];
    for (const [ref, expected, values, set] of [
      ['secretKeyRef', '${env:GATEHOUSE_STORE_SENTINEL_PASSWORD}', 'everything', []],
      ['secretFile', `\${file:${SECRETS_DIR}/gatehouse-redis/sentinel-password}`, 'sidecar', [...redis, 'store.sentinel.password.secretFile.name=gatehouse-redis', 'store.sentinel.password.secretFile.key=sentinel-password']],
    ] as const) {
      const { docs } = await render(values, [...set]);
      const sentinel = configObject(docs)['store']['sentinel'];
      assert.equal(sentinel['password'], expected, ref);
      assert.equal(sentinel['name'], 'gatehouse');
      const env = (container(docs, 'gatehouse')['env'] as Manifest[]).find((e) => e['name'] === 'GATEHOUSE_STORE_SENTINEL_PASSWORD');
      if (ref === 'secretKeyRef') assert.deepEqual(env, { name: 'GATEHOUSE_STORE_SENTINEL_PASSWORD', valueFrom: { secretKeyRef: { name: 'gatehouse-redis', key: 'sentinel-password' } } });
      else assert.ok((podSpec(docs)['volumes'] as Manifest[]).some((v) => v['secret']?.['secretName'] === 'gatehouse-redis'));
      assert.doesNotMatch(configText(docs), /sentinel-password"?\s*$/m);
    }
    const err = await failing('everything', ['store.sentinel.password=s3cr3t']);
    assert.ok(err.includes('store.sentinel.password holds a secret in clear'), err);
    // Without one, the config names none.
    assert.equal('password' in configObject((await render('sidecar', redis)).docs)['store']['sentinel'], false);
    // The sentinels' own certificate name goes through as it is.
    const named = configObject((await render('sidecar', [...redis, 'store.sentinel.servername=redis-sentinel.internal'])).docs)['store']['sentinel'];
    assert.equal(named['servername'], 'redis-sentinel.internal');
  });
});

describe('Redis over mutual TLS', () => {
  const redis = ['store.kind=redis', 'store.url.secretKeyRef.name=gatehouse-redis', 'store.url.secretKeyRef.key=url'];
  const mtls = ['ca.crt', 'tls.crt', 'tls.key'].flatMap((key, i) => {
    const field = ['tlsCa', 'tlsCert', 'tlsKey'][i];
    return [`store.${field}.secretFile.name=redis-client-tls`, `store.${field}.secretFile.key=${key}`];
  });

  test('a kubernetes.io/tls Secret: mounted once, read-only, and the config reads its CA, certificate and key from it', async () => {
    const { docs } = await render('standalone', [...redis, ...mtls, 'store.tlsServername=redis.internal.example.com']);
    assert.deepEqual(configObject(docs)['store']['tls'], {
      ca: `\${file:${SECRETS_DIR}/redis-client-tls/ca.crt}`,
      cert: `\${file:${SECRETS_DIR}/redis-client-tls/tls.crt}`,
      key: `\${file:${SECRETS_DIR}/redis-client-tls/tls.key}`,
      servername: 'redis.internal.example.com',
    });
    const volumes = (podSpec(docs)['volumes'] as Manifest[]).filter((v) => v['secret']?.['secretName'] === 'redis-client-tls');
    assert.equal(volumes.length, 1, 'one volume for the Secret');
    const mounts = (container(docs, 'gatehouse')['volumeMounts'] as Manifest[]).filter((m) => m['name'] === volumes[0]!['name']);
    assert.deepEqual(mounts.map((m) => [m['mountPath'], m['readOnly']]), [[`${SECRETS_DIR}/redis-client-tls`, true]]);
    // What Gatehouse itself makes of it: real PEMs in the files, a config that checks clean.
    const { config, files } = loadRendered(docs, 'redis-mtls');
    assert.ok(config.store.kind === 'redis');
    assert.equal(config.store.tls?.key, files[`${SECRETS_DIR}/redis-client-tls/tls.key`]);
    assert.deepEqual(unsupportedFeatures(config), []);
    assert.doesNotMatch(configText(docs), /BEGIN/, 'no PEM in the ConfigMap');
  });

  test('the key as a plain string, or a certificate without its key, fails the render', async () => {
    const clear = await failing('standalone', [...redis, ...mtls.slice(0, 4), 'store.tlsKey=not-a-reference']);
    assert.ok(clear.includes('store.tlsKey holds a secret in clear'), clear);
    assert.doesNotMatch(clear, /not-a-reference/);
    assert.match(await failing('standalone', [...redis, ...mtls.slice(0, 4)]), /store\.tlsCert and store\.tlsKey go together/);
    assert.match(await failing('standalone', [...redis, ...mtls.slice(4)]), /store\.tlsCert and store\.tlsKey go together/);
  });

  test("an encrypted key's passphrase: from a Secret into the env, never a plain string, never without the key", async () => {
    const passphrase = ['store.tlsPassphrase.secretKeyRef.name=redis-client-tls-passphrase', 'store.tlsPassphrase.secretKeyRef.key=passphrase'];
    const { docs } = await render('standalone', [...redis, ...mtls, ...passphrase]);
    assert.equal(configObject(docs)['store']['tls']['passphrase'], '${env:GATEHOUSE_STORE_TLS_PASSPHRASE}');
    const env = (container(docs, 'gatehouse')['env'] as Manifest[]).find((e) => e['name'] === 'GATEHOUSE_STORE_TLS_PASSPHRASE');
    assert.deepEqual(env, { name: 'GATEHOUSE_STORE_TLS_PASSPHRASE', valueFrom: { secretKeyRef: { name: 'redis-client-tls-passphrase', key: 'passphrase' } } });
    const clear = await failing('standalone', [...redis, ...mtls, 'store.tlsPassphrase=hunter2-in-clear']);
    assert.ok(clear.includes('store.tlsPassphrase holds a secret in clear'), clear);
    assert.doesNotMatch(clear, /hunter2-in-clear/);
    assert.match(await failing('standalone', [...redis, ...mtls.slice(0, 2), ...passphrase]), /store\.tlsPassphrase is given without store\.tlsKey/);
  });
});

// ---- Secrets -----------------------------------------------------------------------------------------------

describe('secrets', () => {
  for (const name of VALUES_NAMES) {
    test(`${name}: every \${env:} reference is an env var from a Secret, every \${file:} one a mounted Secret`, async () => {
      const { docs } = await render(name);
      const text = configText(docs);
      const gh = container(docs, 'gatehouse');
      const envByName = new Map((gh['env'] as Manifest[]).map((e) => [e['name'], e]));
      const refs = [...text.matchAll(/\$\{env:([A-Za-z0-9_]+)\}/g)].map((m) => m[1] as string);
      assert.ok(refs.length > 0, 'the ci values reference secrets, so the config must hold ${env:} references');
      for (const ref of refs) {
        const e = envByName.get(ref);
        assert.ok(e, `\${env:${ref}} has no env var in the gatehouse container`);
        assert.ok(e['valueFrom']?.['secretKeyRef']?.['name'] && e['valueFrom']['secretKeyRef']['key'], `${ref} does not come from a Secret`);
      }
      const volumes = new Map((podSpec(docs)['volumes'] as Manifest[]).map((v) => [v['name'], v]));
      const mounts = gh['volumeMounts'] as Manifest[];
      for (const m of text.matchAll(/\$\{file:([^}]+)\}/g)) {
        const path = m[1] as string;
        const mount = mounts.find((x) => path.startsWith(`${x['mountPath']}/`));
        assert.ok(mount, `${path} is under no mount`);
        assert.equal(mount['readOnly'], true);
        const secretName = volumes.get(mount['name'])?.['secret']?.['secretName'];
        assert.equal(path, `${mount['mountPath']}/${path.slice(mount['mountPath'].length + 1)}`);
        assert.equal(mount['mountPath'], `${SECRETS_DIR}/${secretName}`);
      }
    });

    test(`${name}: no secret value appears in any ConfigMap`, async () => {
      const { docs } = await render(name);
      const { env, files } = loadRendered(docs, `${name}-leak`);
      const secrets = [...Object.values(env), ...Object.values(files)];
      for (const cm of kinds(docs, 'ConfigMap')) {
        const data = JSON.stringify(cm['data'] ?? {});
        for (const s of secrets) assert.ok(!data.includes(s), `ConfigMap ${cm['metadata']['name']} holds a secret value`);
        // Nothing secret-shaped written out in clear either: key hashes, bearer tokens, credentials in URLs.
        assert.doesNotMatch(data, /sha256:[0-9a-f]{64}/);
        assert.doesNotMatch(data, /Bearer (?!\$\{)/);
        assert.doesNotMatch(data, /:\/\/[^/\s"]*:[^/\s"]*@/);
      }
      // The secret-capable fields hold references only.
      const config = configObject(docs);
      const reference = /^(Bearer )?\$\{(env|file):[^}]+\}$/;
      for (const key of (config['auth']['apiKeys'] ?? []) as Manifest[]) assert.match(key['hash'], reference);
      for (const [header, value] of Object.entries((config['upstreams'][0]['headers'] ?? {}) as Record<string, string>)) {
        if (header.toLowerCase() === 'authorization' || header.toLowerCase().includes('key')) assert.match(value, reference);
      }
    });
  }

  test('a secret written in clear in a field that is always a secret is refused: it would land in the ConfigMap', async () => {
    // The view ClusterRole reads ConfigMaps, not Secrets: a token there is readable by every viewer of the namespace.
    const admin = ['admin.enabled=true'];
    for (const [values, set, field] of [
      ['sidecar', [...admin, 'admin.token=0123456789abcdef0123'], 'admin.token'],
      ['sidecar', ['requestStateKey=0123456789abcdef0123456789abcdef0123'], 'requestStateKey'],
      ['sidecar', ['upstream.clientCredentials.tokenUrl=https://auth.example.com/token', 'upstream.clientCredentials.clientId=gh', 'upstream.clientCredentials.clientSecret=s3cr3t'], 'upstream.clientCredentials.clientSecret'],
      ['standalone', ['auth.oauth.introspection.url=https://auth.example.com/introspect', 'auth.oauth.introspection.clientId=gatehouse', 'auth.oauth.introspection.clientSecret=s3cr3t'], 'auth.oauth.introspection.clientSecret'],
      ['sidecar', ['upstream.headers.Authorization=Bearer s3cr3t'], 'upstream.headers.Authorization'],
      ['sidecar', ['upstream.headers.X-Api-Key=s3cr3t'], 'upstream.headers.X-Api-Key'],
      ['standalone', ['tracing.enabled=true', 'tracing.headers.authorization=Basic czNjcjN0'], 'tracing.headers.authorization'],
      ['sidecar', ['store.kind=redis', 'store.url=redis://:s3cr3t@redis:6379/0'], 'store.url'],
    ] as const) {
      const err = await failing(values, [...set]);
      assert.ok(err.includes(`${field} holds a secret in clear`), `${field}: ${err}`);
      assert.match(err, /secretKeyRef.*secretFile/);
    }
    // What is no secret stays a plain string: a header such as X-Team, a Redis URL without a password, a reference.
    const { docs } = await render('sidecar', ['upstream.headers.X-Team=platform', 'store.kind=redis', 'store.url=redis://redis:6379/0', 'upstream.headers.Authorization=Bearer ${env:MY_TOKEN}']);
    const config = configObject(docs);
    assert.equal(config['upstreams'][0]['headers']['X-Team'], 'platform');
    assert.equal(config['upstreams'][0]['headers']['Authorization'], 'Bearer ${env:MY_TOKEN}');
    assert.equal(config['store']['url'], 'redis://redis:6379/0');
  });

  test('extraUpstreams get the same refusal: a credential written in clear there would land in the ConfigMap', async () => {
    // extraUpstreams entries are copied into the config as written; they take no secretKeyRef, only references.
    const stdio = ['extraUpstreams[0].name=files', 'extraUpstreams[0].command={npx,-y,some-server}'];
    const http = ['extraUpstreams[0].name=wiki', 'extraUpstreams[0].url=http://wiki.docs.svc/mcp'];
    for (const [set, field] of [
      [[...http, 'extraUpstreams[0].headers.Authorization=Bearer s3cr3t'], 'extraUpstreams[0].headers.Authorization'],
      [[...http, 'extraUpstreams[0].headers.X-Api-Key=s3cr3t'], 'extraUpstreams[0].headers.X-Api-Key'],
      [['extraUpstreams[0].name=wiki', 'extraUpstreams[0].url=https://gh:s3cr3t@wiki.docs.svc/mcp'], 'extraUpstreams[0].url'],
      [[...http, 'extraUpstreams[0].clientCredentials.tokenUrl=https://auth.example.com/token', 'extraUpstreams[0].clientCredentials.clientId=gh', 'extraUpstreams[0].clientCredentials.clientSecret=s3cr3t'], 'extraUpstreams[0].clientCredentials.clientSecret'],
      [[...stdio, 'extraUpstreams[0].env.GITHUB_TOKEN=ghp_s3cr3t'], 'extraUpstreams[0].env.GITHUB_TOKEN'],
      [[...http, ...stdio.map((s) => s.replace('[0]', '[1]')).slice(0, 1), 'extraUpstreams[1].command={npx,-y,some-server,--db,postgres://app:s3cr3t@db/app}'], 'extraUpstreams[1].command[4]'],
    ] as const) {
      const err = await failing('sidecar', [...set]);
      assert.ok(err.includes(`${field} holds a secret in clear`), `${field}: ${err}`);
      assert.match(err, /\$\{env:NAME\}.*extraEnv/);
    }
    // References and values that are no secret pass, as for the chart's own upstream.
    const { docs } = await render('sidecar', [...http, 'extraUpstreams[0].headers.Authorization=Bearer ${env:WIKI_TOKEN}', 'extraUpstreams[0].headers.X-Team=platform', 'extraUpstreams[1].name=files', 'extraUpstreams[1].command={npx,-y,some-server}', 'extraUpstreams[1].env.GITHUB_TOKEN=${file:/etc/gh/token}', 'extraUpstreams[1].env.LOG_LEVEL=debug']);
    const upstreams = configObject(docs)['upstreams'] as Manifest[];
    assert.deepEqual(upstreams[1]?.['headers'], { Authorization: 'Bearer ${env:WIKI_TOKEN}', 'X-Team': 'platform' });
    assert.deepEqual(upstreams[2]?.['env'], { GITHUB_TOKEN: '${file:/etc/gh/token}', LOG_LEVEL: 'debug' });
  });

  test('API keys read their hash from auth.apiKeysSecret under their id, or under secretKey', async () => {
    const { docs } = await render('sidecar');
    const env = container(docs, 'gatehouse')['env'] as Manifest[];
    const ref = (n: string): unknown => env.find((e) => e['name'] === n)?.['valueFrom']?.['secretKeyRef'];
    assert.deepEqual(ref('GATEHOUSE_API_KEY_CI_BOT_HASH'), { name: 'gatehouse-api-keys', key: 'ci-bot' });
    assert.deepEqual(ref('GATEHOUSE_API_KEY_OPS_HASH'), { name: 'gatehouse-api-keys', key: 'ops-hash' });
    const keys = configObject(docs)['auth']['apiKeys'] as Manifest[];
    assert.deepEqual(keys[1], { id: 'ops', hash: '${env:GATEHOUSE_API_KEY_OPS_HASH}', tenant: 'acme', scopes: ['tools:call'], tools: ['crm/search'], expires: '2027-01-01' });
  });

  test('OAuth and JWKS settings can come from a Secret', async () => {
    const { docs } = await render('standalone');
    const oauth = configObject(docs)['auth']['oauth'];
    assert.equal(oauth['issuer'], '${env:GATEHOUSE_OAUTH_ISSUER}');
    assert.equal(oauth['jwksUri'], '${env:GATEHOUSE_OAUTH_JWKS_URI}');
    const env = container(docs, 'gatehouse')['env'] as Manifest[];
    assert.deepEqual(env.find((e) => e['name'] === 'GATEHOUSE_OAUTH_JWKS_URI')?.['valueFrom'], { secretKeyRef: { name: 'gatehouse-oauth', key: 'jwks-uri' } });
  });
});

// ---- Rolling on config change ------------------------------------------------------------------------------

describe('checksum/config', () => {
  const checksum = (docs: Manifest[]): string | undefined => deployment(docs)['spec']['template']['metadata']['annotations']['checksum/config'];

  test('changes when a config value changes, and only then', async () => {
    const base = checksum((await render('sidecar')).docs);
    assert.match(base ?? '', /^[0-9a-f]{64}$/);
    assert.equal(checksum((await render('sidecar', ['replicaCount=5'])).docs), base, 'a non-config value must not roll the pods');
    assert.notEqual(checksum((await render('sidecar', ['log.level=debug'])).docs), base);
    assert.notEqual(checksum((await render('sidecar', ['upstream.name=other'])).docs), base);
    // Another Secret for the same reference changes the pod's env, which rolls the pods by itself; the config
    // text (and so the checksum) stays the same.
    const other = (await render('sidecar', ['auth.apiKeysSecret=other-keys'])).docs;
    assert.equal(checksum(other), base);
    assert.ok((container(other, 'gatehouse')['env'] as Manifest[]).some((e) => e['valueFrom']?.['secretKeyRef']?.['name'] === 'other-keys'));
  });

  test('is left out when rollOnConfigChange is false (Gatehouse hot-reloads the file)', async () => {
    const { docs } = await render('sidecar', ['rollOnConfigChange=false']);
    assert.equal(checksum(docs), undefined);
  });
});

// ---- Network policy ----------------------------------------------------------------------------------------

describe('NetworkPolicy', () => {
  const metricsRules = (np: Manifest, port: number): Manifest[] =>
    (np['spec']['ingress'] as Manifest[]).filter((r) => (r['ports'] as Manifest[] | undefined)?.some((p) => p['port'] === port));

  for (const name of VALUES_NAMES) {
    test(`${name}: every rule names its ports; metrics only from the monitoring namespace`, async () => {
      const { docs } = await render(name);
      const np = one(docs, 'NetworkPolicy');
      const config = configObject(docs);
      assert.deepEqual(np['spec']['podSelector']['matchLabels'], deployment(docs)['spec']['selector']['matchLabels']);
      assert.deepEqual(np['spec']['policyTypes'], ['Ingress']);
      // A rule without ports would open every port of the pod (the server's own port in sidecar mode).
      for (const rule of np['spec']['ingress'] as Manifest[]) assert.ok((rule['ports'] as Manifest[]).length > 0);
      const rules = metricsRules(np, config['metrics']['port']);
      assert.equal(rules.length, 1, 'exactly one rule admits the metrics port');
      const [rule] = rules as [Manifest];
      assert.deepEqual(rule['ports'], [{ port: config['metrics']['port'], protocol: 'TCP' }]);
      const values = parse(readFileSync(VALUES[name], 'utf8')) as Manifest;
      const namespace = values['networkPolicy']?.['metrics']?.['namespace'] ?? 'monitoring';
      assert.equal(rule['from'].length, 1);
      assert.deepEqual(rule['from'][0]['namespaceSelector'], { matchLabels: { 'kubernetes.io/metadata.name': namespace } });
      assert.equal(rule['from'][0]['ipBlock'], undefined);
      const mcpRules = metricsRules(np, config['listen']['port']);
      assert.equal(mcpRules.length, 1);
      assert.deepEqual(mcpRules[0]?.['ports'], [{ port: config['listen']['port'], protocol: 'TCP' }]);
    });
  }

  test('the MCP port is open to any source by default, to the configured peers otherwise', async () => {
    const sidecar = one((await render('sidecar')).docs, 'NetworkPolicy');
    assert.equal(sidecar['spec']['ingress'][0]['from'], undefined);
    const standalone = one((await render('standalone')).docs, 'NetworkPolicy');
    assert.deepEqual(standalone['spec']['ingress'][0]['from'], [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } }]);
    const everything = one((await render('everything')).docs, 'NetworkPolicy');
    assert.deepEqual(everything['spec']['ingress'][1]['from'], [{
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
    }]);
  });

  test('can be turned off', async () => {
    const { docs } = await render('sidecar', ['networkPolicy.enabled=false']);
    assert.equal(kinds(docs, 'NetworkPolicy').length, 0);
  });
});

// ---- The admin API -----------------------------------------------------------------------------------------

describe('admin API', () => {
  const ports = (docs: Manifest[]): Manifest[] => container(docs, 'gatehouse')['ports'] as Manifest[];
  const ingressOn = (docs: Manifest[], port: number): Manifest[] => (one(docs, 'NetworkPolicy')['spec']['ingress'] as Manifest[]).filter((r) => (r['ports'] as Manifest[]).some((p) => p['port'] === port));

  test('off by default: no admin section in the config, no admin port, no admin Service', async () => {
    for (const name of ['sidecar', 'standalone', 'persistent'] as const) {
      const { docs } = await render(name);
      assert.equal(configObject(docs)['admin'], undefined, name);
      assert.equal(ports(docs).some((p) => p['name'] === 'admin'), false, name);
      assert.equal(kinds(docs, 'Service').length, 1, name);
    }
  });

  test('everything: the token from a Secret file, groups, a Service of its own with ClientIP affinity, reachable only from the named peers', async () => {
    const { docs } = await render('everything');
    assert.deepEqual(configObject(docs)['admin'], { enabled: true, host: '0.0.0.0', port: 9470, token: `\${file:${SECRETS_DIR}/gatehouse-admin/token}`, groups: ['sre'] });
    // Gatehouse's own loader takes it, approvals and all (approvals without a usable admin API are refused).
    const { config, files } = loadRendered(docs, 'admin');
    assert.equal(config.admin.token, files[`${SECRETS_DIR}/gatehouse-admin/token`]);
    assert.deepEqual(unsupportedFeatures(config), []);
    assert.equal(config.policy.approvals.length, 1);
    // Mounted as a directory, not a subPath: a rotated Secret reaches the file, and Gatehouse reloads.
    const mount = (container(docs, 'gatehouse')['volumeMounts'] as Manifest[]).find((m) => m['mountPath'] === `${SECRETS_DIR}/gatehouse-admin`);
    assert.ok(mount, 'the admin token Secret is mounted');
    assert.equal(mount['subPath'], undefined);
    assert.deepEqual(ports(docs).find((p) => p['name'] === 'admin'), { name: 'admin', containerPort: 9470, protocol: 'TCP' });
    const service = one(docs, 'Service', 'gatehouse-all-admin');
    assert.equal(service['spec']['type'], 'ClusterIP');
    assert.equal(service['spec']['sessionAffinity'], 'ClientIP');
    assert.deepEqual(service['spec']['ports'], [{ name: 'admin', port: 9471, targetPort: 'admin', protocol: 'TCP' }]);
    assert.deepEqual(service['spec']['selector'], deployment(docs)['spec']['selector']['matchLabels']);
    // The MCP Service never carries the admin port.
    assert.equal((one(docs, 'Service', 'gatehouse-all')['spec']['ports'] as Manifest[]).some((p) => p['targetPort'] === 'admin'), false);
    const rules = ingressOn(docs, 9470);
    assert.equal(rules.length, 1);
    assert.deepEqual(rules[0]!['ports'], [{ port: 9470, protocol: 'TCP' }]);
    assert.deepEqual(rules[0]!['from'], [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'sre-tools' } } }]);
  });

  test('without a Service or peers, the admin port is open to no one from the network (kubectl port-forward reaches it)', async () => {
    const { docs } = await render('sidecar', ['admin.enabled=true', 'admin.token.secretFile.name=gh-admin', 'admin.token.secretFile.key=token']);
    assert.equal(configObject(docs)['admin']['port'], 9465);
    assert.ok(ports(docs).some((p) => p['name'] === 'admin' && p['containerPort'] === 9465));
    assert.equal(kinds(docs, 'Service').length, 1, 'no admin Service');
    assert.deepEqual(ingressOn(docs, 9465), []);
    assert.equal(loadRendered(docs, 'admin-sidecar').config.admin.enabled, true);
  });

  test('settings nobody could use, or that clash, fail with a message that says what to set', async () => {
    assert.match(await failing('sidecar', ['admin.enabled=true']), /admin\.enabled needs admin\.token .* or admin\.groups/);
    assert.match(await failing('sidecar', ['admin.enabled=true', 'admin.groups[0]=sre']), /admin\.groups needs auth\.oauth/);
    assert.match(await failing('sidecar', ['admin.enabled=true', 'admin.token.secretFile.name=gh-admin', 'admin.token.secretFile.key=token', 'admin.service.enabled=true']), /networkPolicy\.admin\.from/);
    assert.match(await failing('sidecar', ['admin.service.enabled=true']), /admin\.service\.enabled needs admin\.enabled/);
    assert.match(await failing('sidecar', ['admin.enabled=true', 'admin.token.secretFile.name=gh-admin', 'admin.token.secretFile.key=token', 'admin.port=8080']), /admin\.port 8080 clashes/);
    assert.match(await failing('sidecar', ['admin.tokn=x']), /additional properties 'tokn' not allowed/);
  });
});

// ---- The requestState key ----------------------------------------------------------------------------------

describe('requestState key (sessions.requestStateKey: every replica must seal with the same one)', () => {
  test('by default the chart keeps a Secret with a random key, mounted and named by the config; Gatehouse loads it', async () => {
    const { docs } = await render('standalone', ['replicaCount=3', 'extraConfig.sessions.idleTimeoutMs=60000']);
    const secret = one(docs, 'Secret', 'gh-gatehouse-request-state');
    const key = Buffer.from(secret['data']['request-state-key'] as string, 'base64').toString('utf8');
    assert.match(key, /^[A-Za-z0-9]{48}$/);
    const ref = `\${file:${SECRETS_DIR}/gh-gatehouse-request-state/request-state-key}`;
    // The chart's key sits next to the operator's own sessions settings.
    assert.deepEqual(configObject(docs)['sessions'], { idleTimeoutMs: 60000, requestStateKey: ref });
    const mount = (container(docs, 'gatehouse')['volumeMounts'] as Manifest[]).find((m) => m['mountPath'] === `${SECRETS_DIR}/gh-gatehouse-request-state`);
    assert.ok(mount, 'the Secret is mounted');
    const { config, files } = loadRendered(docs, 'request-state');
    assert.equal(config.sessions.requestStateKey, files[`${SECRETS_DIR}/gh-gatehouse-request-state/request-state-key`]);
    assert.equal(config.sessions.idleTimeoutMs, 60000);
  });

  test("the operator's own Secret replaces the chart's", async () => {
    const { docs } = await render('standalone', ['requestStateKey.secretKeyRef.name=my-state', 'requestStateKey.secretKeyRef.key=key']);
    assert.equal(kinds(docs, 'Secret').length, 0);
    assert.equal(configObject(docs)['sessions']['requestStateKey'], '${env:GATEHOUSE_REQUEST_STATE_KEY}');
    const env = (container(docs, 'gatehouse')['env'] as Manifest[]).find((e) => e['name'] === 'GATEHOUSE_REQUEST_STATE_KEY');
    assert.deepEqual(env?.['valueFrom'], { secretKeyRef: { name: 'my-state', key: 'key' } });
  });
});

// ---- The egress proxy's credentials for the sidecar ---------------------------------------------------------

/**
 * A container's env as the kubelet resolves it: secretKeyRef values read from the rendered Secrets (or
 * `given`, for Secrets the chart does not render; others left out), then $(NAME) references to earlier
 * entries expanded.
 */
function resolvedEnv(docs: Manifest[], c: Manifest, given: Record<string, Record<string, string>> = {}): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of (c['env'] as Manifest[] | undefined) ?? []) {
    const ref = e['valueFrom']?.['secretKeyRef'] as { name: string; key: string } | undefined;
    if (ref !== undefined) {
      const rendered = kinds(docs, 'Secret').find((d) => d['metadata']['name'] === ref.name)?.['data']?.[ref.key] as string | undefined;
      const value = rendered !== undefined ? Buffer.from(rendered, 'base64').toString('utf8') : given[ref.name]?.[ref.key];
      if (value !== undefined) out.set(e['name'] as string, value);
    } else {
      out.set(e['name'] as string, String(e['value']).replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name: string) => out.get(name) ?? all));
    }
  }
  return out;
}

// The proxy tells upstreams apart by their credentials. The sidecar's server container got HTTP_PROXY without
// any, and a request without credentials belongs to no upstream beside a stdio one (a stdio child could leave
// its own out): with a stdio extraUpstreams entry the sidecar's connections were judged by the defaults, not by
// its own egress rule. The chart now gives the sidecar upstream an egressProxyToken and puts it in the server's
// proxy URL. README "egress proxy"; GATEWAY-REQUIREMENTS §15 (egress proxy, BP26 §Server-Side Request Forgery).
describe('egress proxy credentials (sidecar)', () => {
  const STDIO = ['extraUpstreams[0].name=files', 'extraUpstreams[0].command={node,files.js}'];

  test("by default the chart keeps a Secret with a random token; Gatehouse's config and the server's HTTP_PROXY both read it", async () => {
    const { docs } = await render('sidecar', ['egressProxy.enabled=true', 'egressProxy.port=3129', ...STDIO]);
    const secret = one(docs, 'Secret', 'gh-gatehouse-egress-proxy');
    const token = Buffer.from(secret['data']['token'] as string, 'base64').toString('utf8');
    assert.match(token, /^[A-Za-z0-9]{48}$/, 'URL-safe: it goes into the proxy URL as it is');
    const ref = { secretKeyRef: { name: 'gh-gatehouse-egress-proxy', key: 'token' } };
    // Gatehouse: the sidecar upstream's egressProxyToken, from the Secret by env (read at start, as the server's).
    const upstreams = configObject(docs)['upstreams'] as Manifest[];
    assert.equal(upstreams[0]!['egressProxyToken'], '${env:GATEHOUSE_EGRESS_PROXY_TOKEN}');
    assert.equal(upstreams[1]!['egressProxyToken'], undefined, 'a stdio child is handed credentials of its own');
    assert.deepEqual((container(docs, 'gatehouse')['env'] as Manifest[]).find((e) => e['name'] === 'GATEHOUSE_EGRESS_PROXY_TOKEN'), { name: 'GATEHOUSE_EGRESS_PROXY_TOKEN', valueFrom: ref });
    // The server: the same Secret, then NAME:TOKEN in every proxy variable, as the kubelet expands it.
    const server = container(docs, 'mcp-server');
    assert.deepEqual((server['env'] as Manifest[])[0], { name: 'GATEHOUSE_EGRESS_PROXY_TOKEN', valueFrom: ref }, 'defined before the entries that refer to it');
    const env = resolvedEnv(docs, server);
    // Gatehouse's config loaded with the value its container gets from the Secret.
    const { config } = loadRendered(docs, 'egress-proxy-token', Object.fromEntries(resolvedEnv(docs, container(docs, 'gatehouse'))));
    assert.equal((config.upstreams[0] as { egressProxyToken?: string }).egressProxyToken, token);
    for (const name of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']) {
      const url = new URL(env.get(name)!);
      assert.equal(`${url.protocol}//${url.host}`, 'http://127.0.0.1:3129', name);
      // What a client sends as Basic credentials, and what the proxy compares them with.
      assert.equal(decodeURIComponent(url.username), config.upstreams[0]!.name, name);
      assert.equal(decodeURIComponent(url.password), token, name);
    }
    assert.equal(env.get('NO_PROXY'), '');
  });

  test("an existing Secret's key replaces the chart's, for both containers", async () => {
    const { docs } = await render('sidecar', ['egressProxy.enabled=true', 'egressProxy.token.secretKeyRef.name=crm-proxy', 'egressProxy.token.secretKeyRef.key=token', ...STDIO]);
    assert.equal(kinds(docs, 'Secret').filter((d) => d['metadata']['name'] === 'gh-gatehouse-egress-proxy').length, 0);
    const ref = { secretKeyRef: { name: 'crm-proxy', key: 'token' } };
    assert.deepEqual((container(docs, 'gatehouse')['env'] as Manifest[]).find((e) => e['name'] === 'GATEHOUSE_EGRESS_PROXY_TOKEN')?.['valueFrom'], ref);
    const env = resolvedEnv(docs, container(docs, 'mcp-server'), { 'crm-proxy': { token: 'operator-token-0123456789' } });
    assert.equal(env.get('HTTPS_PROXY'), 'http://crm:operator-token-0123456789@127.0.0.1:3128');
    assert.equal((configObject(docs)['upstreams'] as Manifest[])[0]!['egressProxyToken'], '${env:GATEHOUSE_EGRESS_PROXY_TOKEN}');
  });

  test('a token in clear, or as a file (read again on rotation while the server keeps its env), fails the render', async () => {
    assert.match(await failing('sidecar', ['egressProxy.enabled=true', 'egressProxy.token=s3cr3t-token-0123456789']), /\/egressProxy\/token/);
    assert.match(await failing('sidecar', ['egressProxy.enabled=true', 'egressProxy.token.secretFile.name=crm-proxy', 'egressProxy.token.secretFile.key=token']), /\/egressProxy\/token/);
  });

  test('off: no Secret, no token, no credentials', async () => {
    const { docs } = await render('sidecar', STDIO);
    assert.equal(kinds(docs, 'Secret').filter((d) => d['metadata']['name'] === 'gh-gatehouse-egress-proxy').length, 0);
    assert.equal((configObject(docs)['upstreams'] as Manifest[])[0]!['egressProxyToken'], undefined);
    assert.equal(((container(docs, 'gatehouse')['env'] as Manifest[]) ?? []).some((e) => e['name'] === 'GATEHOUSE_EGRESS_PROXY_TOKEN'), false);
  });

  test('the Secret and the Deployment pass the Kubernetes schemas (strict)', async () => {
    const kv = findKubernetesValidate();
    const { text } = await render('sidecar', ['egressProxy.enabled=true', ...STDIO]);
    const file = join(work, 'egress-proxy-token.yaml');
    writeFileSync(file, text);
    const r = await run(kv[0] as string, [...kv.slice(1), '--strict', '-k', NEWEST, file]);
    assert.equal(r.code, 0, `kubernetes-validate failed:\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /passed for resource secret\/gh-gatehouse-egress-proxy/);
    assert.match(r.stdout, /passed for resource deployment\/gh-gatehouse/);
  });
});

// ---- PDB, HPA, ServiceMonitor, dashboard -------------------------------------------------------------------

describe('optional objects', () => {
  test('a PodDisruptionBudget selects the pods (minAvailable by default, maxUnavailable when set)', async () => {
    const sidecar = (await render('sidecar')).docs;
    const pdb = one(sidecar, 'PodDisruptionBudget');
    assert.equal(pdb['apiVersion'], 'policy/v1');
    assert.equal(pdb['spec']['minAvailable'], 1);
    assert.deepEqual(pdb['spec']['selector']['matchLabels'], deployment(sidecar)['spec']['selector']['matchLabels']);
    const everything = one((await render('everything')).docs, 'PodDisruptionBudget');
    assert.deepEqual(Object.keys(everything['spec']).sort(), ['maxUnavailable', 'selector']);
    assert.equal(kinds((await render('sidecar', ['podDisruptionBudget.enabled=false'])).docs, 'PodDisruptionBudget').length, 0);
  });

  test('no PodDisruptionBudget that would let no pod go: one replica with minAvailable would block every node drain', async () => {
    for (const [values, set] of [['sidecar', ['replicaCount=1']], ['persistent', ['podDisruptionBudget.enabled=true']]] as const) {
      assert.equal(kinds((await render(values, [...set])).docs, 'PodDisruptionBudget').length, 0, set.join());
    }
    // An explicit maxUnavailable is the operator's budget, kept; so is any budget over several replicas or an HPA.
    const explicit = one((await render('sidecar', ['replicaCount=1', 'podDisruptionBudget.maxUnavailable=1'])).docs, 'PodDisruptionBudget');
    assert.equal(explicit['spec']['maxUnavailable'], 1);
    assert.equal(kinds((await render('sidecar', ['replicaCount=1', 'autoscaling.enabled=true'])).docs, 'PodDisruptionBudget').length, 1);
    // The same for any minAvailable at or above the pods there may be: an HPA resting at minReplicas 1 (where it
    // sits while idle, so every drain of its node waited forever), or minAvailable equal to replicaCount.
    for (const set of [['autoscaling.enabled=true', 'autoscaling.minReplicas=1'], ['replicaCount=2', 'podDisruptionBudget.minAvailable=2'], ['autoscaling.enabled=true', 'autoscaling.minReplicas=3', 'podDisruptionBudget.minAvailable=3']]) {
      assert.equal(kinds((await render('sidecar', set)).docs, 'PodDisruptionBudget').length, 0, set.join());
    }
    assert.equal(one((await render('sidecar', ['replicaCount=3', 'podDisruptionBudget.minAvailable=2'])).docs, 'PodDisruptionBudget')['spec']['minAvailable'], 2);
    assert.equal(one((await render('sidecar', ['autoscaling.enabled=true', 'autoscaling.minReplicas=1', 'podDisruptionBudget.maxUnavailable=1'])).docs, 'PodDisruptionBudget')['spec']['maxUnavailable'], 1);
  });

  test("an HPA on utilization needs every container's request for it, or it can never compute one and never scales", async () => {
    // Utilization is usage over the pod's requests, all containers together: one container without is <unknown>.
    assert.match(await failing('sidecar', ['autoscaling.enabled=true', 'server.resources.requests=null']), /autoscaling\.targetCPUUtilizationPercentage needs server\.resources\.requests\.cpu/);
    assert.match(await failing('sidecar', ['autoscaling.enabled=true', 'server.resources.requests.memory=null', 'autoscaling.targetMemoryUtilizationPercentage=80']), /targetMemoryUtilizationPercentage needs server\.resources\.requests\.memory/);
    assert.match(await failing('standalone', ['autoscaling.enabled=true', 'resources.requests=null']), /needs resources\.requests\.cpu/);
    assert.equal(kinds((await render('sidecar', ['autoscaling.enabled=true'])).docs, 'HorizontalPodAutoscaler').length, 1);
  });

  test('an HPA with neither utilization target fails the render: the API server would scale it on CPU at 80% without a word', async () => {
    // autoscaling/v2 defaults an HPA without metrics to 80% average CPU utilization: the target the values turned off
    // would be back, unchecked against the containers' requests (with none on the server, <unknown>, never scaling).
    for (const values of ['sidecar', 'standalone'] as const) {
      assert.match(await failing(values, ['autoscaling.enabled=true', 'autoscaling.targetCPUUtilizationPercentage=null']), /autoscaling\.enabled needs autoscaling\.targetCPUUtilizationPercentage or autoscaling\.targetMemoryUtilizationPercentage/, values);
    }
    // Memory alone is a metric: the HPA has it and nothing else.
    const { docs } = await render('standalone', ['autoscaling.enabled=true', 'autoscaling.targetCPUUtilizationPercentage=null', 'autoscaling.targetMemoryUtilizationPercentage=70', 'resources.requests.memory=128Mi']);
    assert.deepEqual(one(docs, 'HorizontalPodAutoscaler')['spec']['metrics'], [{ type: 'Resource', resource: { name: 'memory', target: { type: 'Utilization', averageUtilization: 70 } } }]);
  });

  test('an HPA whose minReplicas is above maxReplicas (the API server refuses it) fails the render', async () => {
    assert.match(await failing('everything', ['autoscaling.minReplicas=12']), /autoscaling\.minReplicas 12 is above autoscaling\.maxReplicas 10/);
    assert.equal(one((await render('everything', ['autoscaling.minReplicas=10'])).docs, 'HorizontalPodAutoscaler')['spec']['minReplicas'], 10);
  });

  test('an HPA (autoscaling/v2) only when enabled, and then the Deployment leaves replicas to it', async () => {
    for (const name of ['sidecar', 'standalone'] as const) assert.equal(kinds((await render(name)).docs, 'HorizontalPodAutoscaler').length, 0);
    const { docs } = await render('everything');
    const hpa = one(docs, 'HorizontalPodAutoscaler');
    assert.equal(hpa['apiVersion'], 'autoscaling/v2');
    assert.deepEqual(hpa['spec']['scaleTargetRef'], { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment(docs)['metadata']['name'] });
    assert.equal(hpa['spec']['minReplicas'], 3);
    assert.equal(hpa['spec']['maxReplicas'], 10);
    assert.deepEqual((hpa['spec']['metrics'] as Manifest[]).map((m) => [m['resource']['name'], m['resource']['target']['averageUtilization']]), [['cpu', 70], ['memory', 80]]);
    assert.equal(deployment(docs)['spec']['replicas'], undefined);
  });

  test('a ServiceMonitor (monitoring.coreos.com/v1) only when enabled, scraping the Service metrics port', async () => {
    for (const name of ['sidecar', 'standalone'] as const) assert.equal(kinds((await render(name)).docs, 'ServiceMonitor').length, 0);
    const { docs } = await render('everything');
    const sm = one(docs, 'ServiceMonitor');
    const svc = mcpService(docs);
    assert.equal(sm['apiVersion'], 'monitoring.coreos.com/v1');
    assert.equal(sm['metadata']['labels']['release'], 'kube-prometheus-stack');
    for (const [k, v] of Object.entries(sm['spec']['selector']['matchLabels'] as Record<string, string>)) assert.equal(svc['metadata']['labels'][k], v);
    assert.deepEqual(sm['spec']['namespaceSelector'], { matchNames: [NAMESPACE] });
    assert.deepEqual(sm['spec']['endpoints'], [{ port: 'metrics', path: '/metrics', interval: '15s', scrapeTimeout: '10s' }]);
    assert.ok((svc['spec']['ports'] as Manifest[]).some((p) => p['name'] === 'metrics' && p['targetPort'] === 'metrics' && p['port'] === 9090));
  });

  test("a ServiceMonitor whose scrapeTimeout is longer than its interval fails the render: Prometheus refuses such a scrape", async () => {
    // interval: 5s with the default scrapeTimeout 10s rendered; Prometheus (and the operator, which drops such a
    // ServiceMonitor) refuses a timeout above the interval, and Gatehouse went unscraped without a word here.
    for (const set of [['metrics.serviceMonitor.interval=5s'], ['metrics.serviceMonitor.interval=1m', 'metrics.serviceMonitor.scrapeTimeout=2m'], ['metrics.serviceMonitor.interval=500ms', 'metrics.serviceMonitor.scrapeTimeout=1s']]) {
      assert.match(await failing('everything', set), /metrics\.serviceMonitor\.scrapeTimeout .* is longer than metrics\.serviceMonitor\.interval/, set.join());
    }
    for (const set of [['metrics.serviceMonitor.interval=10s'], ['metrics.serviceMonitor.interval=1m', 'metrics.serviceMonitor.scrapeTimeout=59s'], ['metrics.serviceMonitor.interval=1h', 'metrics.serviceMonitor.scrapeTimeout=2m']]) {
      assert.equal(kinds((await render('everything', set)).docs, 'ServiceMonitor').length, 1, set.join());
    }
  });

  test('the Grafana dashboard ConfigMap only when enabled, labelled grafana_dashboard: "1"', async () => {
    for (const name of ['sidecar', 'standalone'] as const) {
      assert.equal(kinds((await render(name)).docs, 'ConfigMap').filter((c) => c['metadata']['labels']['grafana_dashboard']).length, 0);
    }
    const { docs } = await render('everything');
    const cm = one(docs, 'ConfigMap', 'gatehouse-all-dashboard');
    assert.equal(cm['metadata']['labels']['grafana_dashboard'], '1');
    assert.equal(cm['metadata']['annotations']['grafana_folder'], 'MCP');
    assert.deepEqual(JSON.parse(cm['data']['gatehouse.json']), JSON.parse(readFileSync(join(CHART, 'dashboards/gatehouse.json'), 'utf8')));
  });
});

describe('Grafana dashboard', () => {
  const dashboard = JSON.parse(readFileSync(join(CHART, 'dashboards/gatehouse.json'), 'utf8')) as Manifest;
  const panels = dashboard['panels'] as Manifest[];
  const exprs = panels.flatMap((p) => ((p['targets'] ?? []) as Manifest[]).map((t) => String(t['expr'])));

  test('has a panel for every Gatehouse and process metric', () => {
    const metrics = [
      'gatehouse_requests_total', 'gatehouse_tool_calls_total', 'gatehouse_request_duration_seconds_bucket',
      'gatehouse_upstream_request_duration_seconds_bucket', 'gatehouse_upstream_up', 'gatehouse_upstream_info',
      'gatehouse_legacy_sessions', 'gatehouse_in_flight_requests', 'gatehouse_config_reloads_total',
      'gatehouse_auth_failures_total', 'gatehouse_refusals_total', 'gatehouse_store_up', 'gatehouse_store_errors_total',
      'process_cpu_seconds_total', 'process_resident_memory_bytes',
    ];
    for (const m of metrics) assert.ok(exprs.some((e) => new RegExp(`\\b${m}\\{`).test(e)), `no panel queries ${m}`);
    for (const [metric, labels] of [
      ['gatehouse_requests_total', ['method', 'era', 'upstream', 'outcome']],
      ['gatehouse_tool_calls_total', ['tool', 'outcome', 'error_code']],
      ['gatehouse_upstream_request_duration_seconds_bucket', ['upstream']],
      ['gatehouse_upstream_info', ['upstream', 'era']],
      ['gatehouse_config_reloads_total', ['result']],
      ['gatehouse_auth_failures_total', ['reason']],
      ['gatehouse_refusals_total', ['reason']],
    ] as const) {
      for (const label of labels) {
        assert.ok(exprs.some((e) => e.includes(metric) && new RegExp(`by \\([^)]*\\b${label}\\b`).test(e)), `no panel breaks ${metric} down by ${label}`);
      }
    }
  });

  test('is a well-formed Grafana dashboard: unique ids, templated Prometheus data source, grid inside 24 columns', () => {
    assert.equal(dashboard['uid'], 'gatehouse-overview');
    const ids = panels.map((p) => p['id']);
    assert.equal(new Set(ids).size, ids.length);
    const vars = (dashboard['templating']['list'] as Manifest[]).map((v) => v['name']);
    assert.deepEqual(vars, ['datasource', 'namespace', 'job']);
    for (const p of panels) {
      assert.ok(p['gridPos']['x'] + p['gridPos']['w'] <= 24, `${p['title']} overflows the grid`);
      if (p['type'] !== 'row') assert.deepEqual(p['datasource'], { type: 'prometheus', uid: '${datasource}' });
    }
    for (const e of exprs) {
      let depth = 0;
      for (const ch of e) {
        if (ch === '(' || ch === '{' || ch === '[') depth++;
        if (ch === ')' || ch === '}' || ch === ']') depth--;
        assert.ok(depth >= 0, `unbalanced: ${e}`);
      }
      assert.equal(depth, 0, `unbalanced: ${e}`);
    }
  });
});

// ---- Names Kubernetes accepts ------------------------------------------------------------------------------

describe('names', () => {
  // The longest fullname the chart makes (it truncates to 63): every name derived from it must still fit.
  const LONG = `gatehouse-${'x'.repeat(47)}-east1`;
  const DNS_1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
  const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
  /** Names the API server would refuse, as "<kind>/<name>: why". */
  function badNames(docs: Manifest[]): string[] {
    const bad: string[] = [];
    for (const d of docs) {
      const name = String(d['metadata']['name']);
      // A Service's name is a DNS-1035 label (RFC 1035: a letter first, 63 at most); other objects' a subdomain.
      if (d['kind'] === 'Service' && !(name.length <= 63 && DNS_1035_LABEL.test(name))) bad.push(`Service/${name}: not a DNS-1035 label of 63 characters at most`);
      if (name.length > 253) bad.push(`${d['kind']}/${name}: longer than 253`);
      // A pod's volumes: DNS-1123 labels, 63 at most, unique within the pod.
      const spec = (d['kind'] === 'Pod' ? d['spec'] : d['spec']?.['template']?.['spec']) as Manifest | undefined;
      const volumes = ((spec?.['volumes'] ?? []) as Manifest[]).map((v) => String(v['name']));
      for (const v of volumes) if (!(v.length <= 63 && DNS_LABEL.test(v))) bad.push(`${d['kind']}/${name} volume ${v}: not a DNS-1123 label of 63 characters at most`);
      if (new Set(volumes).size !== volumes.length) bad.push(`${d['kind']}/${name}: two volumes share a name (${volumes.join(', ')})`);
    }
    return bad;
  }

  test('a 63-character fullnameOverride still gives names Kubernetes accepts, with every optional object on', async () => {
    assert.equal(LONG.length, 63);
    const { docs } = await render('everything', [`fullnameOverride=${LONG}`]);
    assert.deepEqual(badNames(docs), []);
    const admin = kinds(docs, 'Service').find((s) => String(s['metadata']['name']).endsWith('-admin'));
    assert.ok(admin, 'the admin Service is rendered');
  });

  test('Secrets named with dots, or long ones that share a beginning, each get a volume of their own with a valid name', async () => {
    const long = `gatehouse-secrets-${'y'.repeat(44)}`;
    const { docs } = await render('everything', [
      'admin.token.secretFile.name=admin.example.com', 'admin.token.secretFile.key=token',
      `upstream.headers.Authorization.secretFile.name=${long}-a`, 'upstream.headers.Authorization.secretFile.key=bearer',
      `store.tlsCa.secretFile.name=${long}-b`, 'store.tlsCa.secretFile.key=ca.crt',
    ]);
    assert.deepEqual(badNames(docs), []);
    // Each Secret still mounted where the config reads it, from a volume of that Secret.
    const spec = podSpec(docs);
    const volumes = new Map((spec['volumes'] as Manifest[]).map((v) => [v['name'], v]));
    for (const secret of ['admin.example.com', `${long}-a`, `${long}-b`]) {
      const mount = (container(docs, 'gatehouse')['volumeMounts'] as Manifest[]).find((m) => m['mountPath'] === `${SECRETS_DIR}/${secret}`);
      assert.ok(mount, `${secret} is mounted`);
      assert.equal(volumes.get(mount['name'])?.['secret']?.['secretName'], secret);
    }
    assert.match(configText(docs), /\$\{file:\/etc\/gatehouse-secrets\/admin\.example\.com\/token\}/);
  });
});

// ---- values.schema.json and friendly failures ----------------------------------------------------------------

describe('values', () => {

  test('values.schema.json rejects a typo at the top level and in the chart\'s own sections', async () => {
    assert.match(await failing('sidecar', ['replicas=3']), /additional properties 'replicas' not allowed/);
    assert.match(await failing('sidecar', ['metrics.serviceMonitr.enabled=true']), /additional properties 'serviceMonitr' not allowed/);
    assert.match(await failing('sidecar', ['mode=daemonset']), /mode/);
    assert.match(await failing('sidecar', ['upstream.name=has space']), /upstream\/name/);
  });

  test('missing essentials fail with a message that says what to set', async () => {
    assert.match(await failing('sidecar', ['server.image.repository=']), /server\.image\.repository/);
    assert.match(await failing('standalone', ['upstream.url=']), /needs upstream\.url/);
    assert.match(await failing('sidecar', ['auth.apiKeys=null']), /auth\.apiKeys .*or auth\.oauth/);
    assert.match(await failing('sidecar', ['server.port=8080']), /clashes/);
    assert.match(await failing('sidecar', ['auth.apiKeysSecret=']), /no hash/);
    // Two references that would share one env var name are refused rather than one silently winning.
    assert.match(await failing('everything', ['upstream.headers.X_Api_Key.secretKeyRef.name=s,upstream.headers.X_Api_Key.secretKeyRef.key=k']), /GATEHOUSE_UPSTREAM_HEADER_X_API_KEY is already used/);
    assert.match(await failing('sidecar', ['upstream.headers.Authorization.secretKeyRef.name=only-a-name']), /upstream\/headers\/Authorization/);
    assert.match(await failing('persistent', ['replicaCount=2']), /store\.persistence .* serves one pod: set replicaCount: 1/);
    assert.match(await failing('persistent', ['autoscaling.enabled=true']), /serves one pod/);
    assert.match(await failing('everything', ['store.persistence.enabled=true']), /store\.persistence is for the sqlite store/);
    assert.match(await failing('everything', ['store.cluster.nodes[0]=redis-0:6379']), /store\.sentinel and store\.cluster exclude each other/);
    assert.match(await failing('sidecar', ['store.kind=redis']), /store\.kind: redis needs store\.url/);
    // The root filesystem is read-only: the SQLite file (and its -wal and -shm) can only be written under /data,
    // the only place a claim keeps it; a relative path resolves against the working directory, /data.
    for (const path of ['/var/lib/gatehouse/gatehouse.db', '/tmp/gatehouse.db', '/data/../etc/gatehouse.db', '../gatehouse.db', '/data']) {
      assert.match(await failing('sidecar', [`store.path=${path}`]), /store\.path .* under \/data/, path);
    }
    for (const path of ['/data/state/gatehouse.db', 'gatehouse.db']) assert.ok(configObject((await render('sidecar', [`store.path=${path}`])).docs)['store']['path'] === path);
    // A volume of the operator's own, mounted writable, is a place too.
    const own = ['store.path=/state/gatehouse.db', 'extraVolumeMounts[0].name=state', 'extraVolumeMounts[0].mountPath=/state', 'extraVolumes[0].name=state', 'extraVolumes[0].emptyDir.medium=Memory'];
    assert.equal(configObject((await render('sidecar', own)).docs)['store']['path'], '/state/gatehouse.db');
    assert.match(await failing('sidecar', [...own, 'extraVolumeMounts[0].readOnly=true']), /store\.path/);
    assert.match(await failing('sidecar', ['store.keyPrefix=a{b}']), /keyPrefix/);
    assert.match(await failing('standalone', ['egressProxy.enabled=true']), /egressProxy is for sidecar mode/);
    assert.match(await failing('sidecar', ['egressProxy.enabled=true', 'egressProxy.port=3001']), /egressProxy\.port 3001 clashes/);
    // Gatehouse binds both listeners on 0.0.0.0: one port for both fails at start, every restart.
    assert.match(await failing('standalone', ['metrics.port=8080']), /metrics\.port 8080 clashes with listen\.port/);
    assert.match(await failing('standalone', ['listen.port=9464']), /metrics\.port 9464 clashes with listen\.port/);
    // A Service with one port twice is refused by the API server.
    assert.match(await failing('standalone', ['service.port=9464']), /service\.port 9464 .*service\.metricsPort/);
  });

  test('the Gatehouse image has no default: none is published, so a bare name would pull whatever a registry serves under it', async () => {
    // `gatehouse` alone is a short name: containerd reads it as docker.io/library/gatehouse, which is no Gatehouse
    // image (ImagePullBackOff after a "successful" install), and a runtime with unqualified-search-registries
    // (CRI-O, Podman) takes the first registry that answers for it, anybody's image.
    const defaults = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Manifest;
    assert.equal(defaults['image']['repository'], '');
    for (const values of VALUES_NAMES) {
      assert.match(await failing(values, ['image.repository=']), /image\.repository is required: .*Dockerfile.*registry/, values);
    }
    // Named, it is used as given, with the chart's appVersion as the tag unless image.tag says otherwise.
    assert.equal(container((await render('sidecar', ['image.repository=registry.example.com/platform/gatehouse'])).docs, 'gatehouse')['image'], 'registry.example.com/platform/gatehouse:0.1.0');
  });

  test('the Gatehouse image can be pinned by digest (image.digest), in the Deployment and the helm test pod alike', async () => {
    // A tag can be moved to other contents; a digest names exactly the image that was built and reviewed. Before,
    // image.tag always got the appVersion in its place when empty, so "repo@sha256:..." could not be rendered.
    const digest = `sha256:${'0123456789abcdef'.repeat(4)}`;
    const { docs } = await render('sidecar', [`image.digest=${digest}`]);
    assert.equal(container(docs, 'gatehouse')['image'], `registry.example.com/platform/gatehouse@${digest}`);
    assert.equal((one(docs, 'Pod')['spec']['containers'] as Manifest[])[0]?.['image'], `registry.example.com/platform/gatehouse@${digest}`);
    assert.match(await failing('sidecar', ['image.digest=latest']), /image\/digest/);
  });

  test("extraVolumes and mounts that take a volume name or a path the chart uses fail the render: the API server refuses the pod", async () => {
    // Volume names are unique in a pod and mount paths in a container; the chart's are config, data, tmp, home,
    // server-tmp and secret-<name>, mounted at /etc/gatehouse, /data, /tmp, /home/gatehouse and /etc/gatehouse-secrets/<name>.
    const vol = (name: string) => [`extraVolumes[0].name=${name}`, 'extraVolumes[0].emptyDir.medium=Memory'];
    const mount = (path: string, key = 'extraVolumeMounts') => [...vol('scratch'), `${key}[0].name=scratch`, `${key}[0].mountPath=${path}`];
    for (const name of ['config', 'data', 'tmp', 'server-tmp']) {
      assert.match(await failing('sidecar', vol(name)), new RegExp(`extraVolumes\\[0\\]\\.name "${name}" is a volume of the chart's own`), name);
    }
    assert.match(await failing('everything', vol('secret-gatehouse-admin')), /extraVolumes\[0\]\.name "secret-gatehouse-admin" is a volume of the chart's own/);
    for (const path of ['/tmp', '/data', '/etc/gatehouse', '/tmp/']) {
      assert.match(await failing('sidecar', mount(path)), /extraVolumeMounts\[0\]\.mountPath .* is a mount of the chart's own/, path);
    }
    assert.match(await failing('everything', mount('/etc/gatehouse-secrets/gatehouse-admin')), /is a mount of the chart's own/);
    assert.match(await failing('sidecar', mount('/tmp', 'server.volumeMounts')), /server\.volumeMounts\[0\]\.mountPath .* is a mount of the chart's own/);
    // Other names and paths pass, below the chart's paths too (a store directory of its own under /data).
    const { docs } = await render('sidecar', mount('/data/scratch'));
    assert.ok((container(docs, 'gatehouse')['volumeMounts'] as Manifest[]).some((m) => m['mountPath'] === '/data/scratch'));
  });

  test("podLabels and podAnnotations merge with the chart's own: one key each, a selector label or the config checksum refused", async () => {
    // A key given twice in one mapping is invalid YAML (strict parsers, kubectl apply of `helm template` output, refuse
    // it); helm keeps the last: a selector label then no longer matched the selector (the API server refuses the
    // Deployment) and checksum/config lost its hash (config changes stopped rolling the pods).
    assert.match(await failing('sidecar', ['podLabels.app\\.kubernetes\\.io/name=crm']), /podLabels\.app\.kubernetes\.io\/name .*selector/);
    assert.match(await failing('sidecar', ['podLabels.app\\.kubernetes\\.io/instance=crm']), /podLabels\.app\.kubernetes\.io\/instance .*selector/);
    assert.match(await failing('sidecar', ['podAnnotations.checksum/config=pinned']), /podAnnotations\.checksum\/config .*rollOnConfigChange/);
    // Other chart labels and annotations are the operator's to change; render() checks the YAML has no duplicate key.
    const { docs } = await render('sidecar', ['podLabels.app\\.kubernetes\\.io/component=crm-gateway', 'podLabels.team=crm', 'podAnnotations.kubectl\\.kubernetes\\.io/default-container=mcp-server']);
    const meta = deployment(docs)['spec']['template']['metadata'];
    assert.equal(meta['labels']['app.kubernetes.io/component'], 'crm-gateway');
    assert.equal(meta['labels']['team'], 'crm');
    assert.equal(meta['labels']['app.kubernetes.io/name'], 'gatehouse');
    assert.equal(meta['annotations']['kubectl.kubernetes.io/default-container'], 'mcp-server');
    assert.match(meta['annotations']['checksum/config'], /^[0-9a-f]{64}$/);
  });

  test("listen.path cannot be a path of Gatehouse's own endpoints, where the chart's probes go", async () => {
    // The MCP endpoint is matched first: the kubelet's GET /healthz, with no credentials, would get 401 from it, so
    // the liveness probe failed and the pod restarted forever (/readyz: never ready).
    for (const path of ['/healthz', '/readyz', '/health']) {
      assert.match(await failing('sidecar', [`listen.path=${path}`]), new RegExp(`listen\\.path ${path} is Gatehouse's own`), path);
    }
    assert.equal(configObject((await render('sidecar', ['listen.path=/healthz/mcp'])).docs)['listen']['path'], '/healthz/mcp');
  });

  test('a stdio extraUpstream gets a writable HOME: npx and npm write their cache there, and the root filesystem is read-only', async () => {
    // The image's user (uid 1000, node) has HOME /home/node on the read-only root filesystem; a stdio child inherits it.
    const stdio = ['extraUpstreams[0].name=files', 'extraUpstreams[0].command={npx,-y,some-server}'];
    const { docs } = await render('sidecar', stdio);
    const doctor = one(docs, 'Pod');
    for (const [what, spec, c] of [
      ['Deployment', podSpec(docs), container(docs, 'gatehouse')],
      ['helm test pod', doctor['spec'], (doctor['spec']['containers'] as Manifest[])[0]],
    ] as const) {
      assert.equal(c?.['securityContext']['readOnlyRootFilesystem'], true, what);
      const home = (c?.['env'] as Manifest[]).filter((e) => e['name'] === 'HOME');
      assert.equal(home.length, 1, `${what}: one HOME`);
      const path = home[0]?.['value'] as string;
      const mount = (c?.['volumeMounts'] as Manifest[]).find((m) => m['mountPath'] === path);
      assert.ok(mount, `${what}: HOME ${path} is a mounted volume`);
      assert.notEqual(mount['readOnly'], true, what);
      const volume = (spec['volumes'] as Manifest[]).find((v) => v['name'] === mount['name']);
      assert.deepEqual(volume?.['emptyDir'], { sizeLimit: '512Mi' }, what);
    }
    // No stdio upstream (everything has an HTTP one): no HOME volume. HOME set in extraEnv is left alone.
    const http = container((await render('everything')).docs, 'gatehouse');
    assert.equal((http['env'] as Manifest[]).some((e) => e['name'] === 'HOME'), false);
    assert.equal((http['volumeMounts'] as Manifest[]).some((m) => m['name'] === 'home'), false);
    const own = container((await render('sidecar', [...stdio, 'extraEnv[0].name=HOME', 'extraEnv[0].value=/data'])).docs, 'gatehouse');
    assert.deepEqual((own['env'] as Manifest[]).filter((e) => e['name'] === 'HOME'), [{ name: 'HOME', value: '/data' }]);
  });

  test('a Gatehouse port below 1024 fails the render: a non-root user without capabilities cannot bind it', async () => {
    // The chart's securityContext (runAsUser 1000, capabilities drop ALL) leaves such a port unbindable wherever the
    // runtime keeps ip_unprivileged_port_start at 1024 (CRI-O, containerd 1): the pod would crash-loop there.
    const admin = ['admin.enabled=true', 'admin.token=${env:ADMIN_TOKEN}'];
    for (const [set, field, service] of [
      [['listen.port=80', 'service.port=80'], 'listen.port 80', 'service.port'],
      [['metrics.port=443'], 'metrics.port 443', 'service.metricsPort'],
      [[...admin, 'admin.port=900'], 'admin.port 900', 'admin.service.port'],
      [['egressProxy.enabled=true', 'egressProxy.port=1000'], 'egressProxy.port 1000', undefined],
    ] as const) {
      const err = await failing('sidecar', [...set]);
      assert.ok(err.includes(`${field} is below 1024`), `${field}: ${err}`);
      assert.match(err, /1024 or more/);
      if (service !== undefined) assert.ok(err.includes(`Service's port (${service}) may stay`), err);
      assert.match(err, /net\.ipv4\.ip_unprivileged_port_start/);
    }
    // The Service's own port is separate and may be 80; a lowered bound (a safe sysctl) lets the pod bind 80.
    const { docs } = await render('sidecar', ['service.port=80']);
    assert.deepEqual((one(docs, 'Service')['spec']['ports'] as Manifest[])[0], { name: 'mcp', port: 80, targetPort: 'mcp', protocol: 'TCP' });
    const sysctl = ['podSecurityContext.sysctls[0].name=net.ipv4.ip_unprivileged_port_start', 'podSecurityContext.sysctls[0].value=80'];
    const lowered = await render('sidecar', ['listen.port=80', ...sysctl]);
    assert.equal(configObject(lowered.docs)['listen']['port'], 80);
    assert.match(await failing('sidecar', ['listen.port=79', ...sysctl]), /listen\.port 79 is below 80/);
  });

  test("terminationGracePeriodSeconds leaves Gatehouse its delay, its drain (shutdown.graceMs) and the stop after it, or the render fails", async () => {
    // The kubelet kills the container at terminationGracePeriodSeconds: a drain still running is cut, the store unclosed.
    assert.match(await failing('sidecar', ['terminationGracePeriodSeconds=10']), /terminationGracePeriodSeconds 10 .*shutdown\.graceMs 10000/);
    assert.match(await failing('sidecar', ['extraConfig.shutdown.graceMs=60000']), /terminationGracePeriodSeconds 30 .*shutdown\.delayMs 5000.*shutdown\.graceMs 60000.*at least 70/);
    const { docs } = await render('sidecar', ['extraConfig.shutdown.graceMs=60000', 'terminationGracePeriodSeconds=70']);
    assert.equal(podSpec(docs)['terminationGracePeriodSeconds'], 70);
    assert.equal(loadRendered(docs, 'grace').config.shutdown.graceMs, 60000);
    // The delay counts: 5 s of it, 10 s of drain and 5 s of stop need 20 s.
    assert.match(await failing('sidecar', ['terminationGracePeriodSeconds=19']), /terminationGracePeriodSeconds 19 .*shutdown\.delayMs 5000.*shutdown\.graceMs 10000.*at least 20/);
    assert.match(await failing('sidecar', ['shutdown.delayMs=30000']), /terminationGracePeriodSeconds 30 .*shutdown\.delayMs 30000.*at least 45/);
    assert.equal(podSpec((await render('sidecar', ['terminationGracePeriodSeconds=20'])).docs)['terminationGracePeriodSeconds'], 20);
  });

  test('shutdown.delayMs (5000 by default) is rendered into the config: pods leave the Service before they refuse connections', async () => {
    // Without it Gatehouse stops accepting at SIGTERM while the endpoints still send it new connections.
    const byDefault = loadRendered((await render('standalone')).docs, 'delay').config;
    assert.equal(byDefault.shutdown.delayMs, 5000);
    assert.equal(byDefault.shutdown.graceMs, 10000);
    // 0 turns it off; extraConfig's graceMs merges beside the chart's delay.
    const off = loadRendered((await render('sidecar', ['shutdown.delayMs=0', 'extraConfig.shutdown.graceMs=20000'])).docs, 'no-delay').config;
    assert.deepEqual(off.shutdown, { delayMs: 0, graceMs: 20000 });
    assert.match(await failing('sidecar', ['extraConfig.shutdown.delayMs=1000']), /extraConfig\.shutdown\.delayMs .*set shutdown\.delayMs/);
    assert.match(await failing('sidecar', ['shutdown.delayMs=-1']), /delayMs/);
  });

  test('extraConfig with a key Gatehouse does not know fails the render, instead of every start of the pods', async () => {
    // Gatehouse refuses a config with an unknown key (check-config: "unknown key; did you mean ..."): written into
    // the ConfigMap, it crash-looped the new pods and hung the rollout. Typos at the top, deeper, and in list items.
    for (const [set, path, known] of [
      ['extraConfig.polcy.rules[0].access=allow', 'extraConfig.polcy', /policy/],
      ['extraConfig.tools.nameing.prefix=always', 'extraConfig.tools.nameing', /naming/],
      ['extraConfig.policy.rules[0].acess=allow', 'extraConfig.policy.rules[0].acess', /access/],
      ['extraConfig.store.commandTimeoutMS=500', 'extraConfig.store.commandTimeoutMS', /commandTimeoutMs/],
    ] as const) {
      const err = await failing('sidecar', [set]);
      assert.ok(err.includes(`${path} is not a Gatehouse config key`), `${set}: ${err}`);
      assert.match(err, known, set);
    }
    // Free-form maps below a known key are not checked (a tool's time limit, a header), and known keys pass.
    const { docs } = await render('sidecar', ['extraConfig.policy.rules[0].access=allow', 'extraConfig.policy.rules[0].tools[0]=crm/*', 'extraConfig.sessions.idleTimeoutMs=60000', 'extraConfig.store.commandTimeoutMs=500']);
    assert.equal(configObject(docs)['sessions']['idleTimeoutMs'], 60000);
    // The key tree the chart checks against is the one the config's schema gives now.
    const generated = execFileSync(process.execPath, [join(ROOT, 'scripts/gen-chart-config-keys.mjs'), '--stdout'], { encoding: 'utf8' });
    assert.equal(readFileSync(join(CHART, 'files/config-keys.json'), 'utf8'), generated, 'charts/gatehouse/files/config-keys.json is stale: run node scripts/gen-chart-config-keys.mjs');
  });

  test('an extraUpstreams entry with a key Gatehouse does not know fails the render, instead of every start of the pods', async () => {
    // extraUpstreams entries are copied into the config's upstreams as written, like extraConfig.
    for (const [set, path, known] of [
      [['extraUpstreams[0].name=wiki', 'extraUpstreams[0].url=http://wiki/mcp', 'extraUpstreams[0].header.X-Team=docs'], 'extraUpstreams[0].header', /headers/],
      [['extraUpstreams[0].name=files', 'extraUpstreams[0].command={npx,-y,some-server}', 'extraUpstreams[0].restart.attempt=3'], 'extraUpstreams[0].restart.attempt', /attempts/],
    ] as const) {
      const err = await failing('sidecar', [...set]);
      assert.ok(err.includes(`${path} is not a Gatehouse config key`), `${set.join(' ')}: ${err}`);
      assert.match(err, known);
    }
  });

  test('extraConfig naming a setting the chart renders from its own values fails, instead of being dropped', async () => {
    // The chart's keys win the merge: these were silently ignored (an upstream gone, a level not applied).
    assert.match(await failing('standalone', ['extraConfig.upstreams[0].name=wiki', 'extraConfig.upstreams[0].url=http://wiki/mcp']), /extraConfig\.upstreams .*extraUpstreams/);
    assert.match(await failing('standalone', ['extraConfig.log.level=debug', 'log.level=info']), /extraConfig\.log\.level .*log\.level/);
    assert.match(await failing('standalone', ['extraConfig.listen.port=9000']), /extraConfig\.listen\.port/);
    // mergo keeps a false or 0 from extraConfig over the chart's: refused as well.
    assert.match(await failing('sidecar', ['metrics.enabled=false', 'extraConfig.metrics.enabled=true']), /extraConfig\.metrics\.enabled/);
    // Keys the chart leaves alone still merge in, beside the chart's own in the same section; the same value is no conflict.
    const { docs } = await render('standalone', ['extraConfig.listen.maxBodyBytes=1048576', 'extraConfig.log.format=json', 'extraConfig.log.level=debug']);
    assert.equal(configObject(docs)['listen']['maxBodyBytes'], 1048576);
    assert.deepEqual(configObject(docs)['log'], { level: 'debug', format: 'json' });
  });

  test('a Secret key or name Kubernetes would refuse in a secretKeyRef is refused here, with what to set', async () => {
    // An API key's id may hold ':', a Secret's key may not: the key's default (its id) cannot be used then.
    assert.match(await failing('sidecar', ['auth.apiKeys[0].id=team:ci']), /auth\.apiKeys\[0\] \(team:ci\).*secretKey/);
    const named = await render('sidecar', ['auth.apiKeys[0].id=team:ci', 'auth.apiKeys[0].secretKey=team-ci']);
    const env = (container(named.docs, 'gatehouse')['env'] as Manifest[]).find((e) => e['name'] === 'GATEHOUSE_API_KEY_TEAM_CI_HASH');
    assert.deepEqual(env?.['valueFrom'], { secretKeyRef: { name: 'gatehouse-api-keys', key: 'team-ci' } });
    assert.match(await failing('sidecar', ['upstream.headers.Authorization.secretKeyRef.name=tok', 'upstream.headers.Authorization.secretKeyRef.key=a:b']), /upstream\/headers\/Authorization/);
    assert.match(await failing('sidecar', ['upstream.headers.Authorization.secretFile.name=Tokens_A', 'upstream.headers.Authorization.secretFile.key=t']), /upstream\/headers\/Authorization/);
    assert.match(await failing('sidecar', ['auth.apiKeysSecret=API_KEYS']), /apiKeysSecret/);
  });

  test('the values files in ci/ only use keys that values.yaml documents', () => {
    const defaults = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Manifest;
    for (const name of VALUES_NAMES) {
      const values = parse(readFileSync(VALUES[name], 'utf8')) as Manifest;
      for (const key of Object.keys(values)) assert.ok(key in defaults, `${name}: ${key} is not in values.yaml`);
    }
  });
});

// ---- NOTES.txt ---------------------------------------------------------------------------------------------

describe('NOTES.txt', () => {
  /** helm template does not print NOTES.txt; a copy of the chart renders it into a ConfigMap through tpl. */
  async function notes(values: ValuesName, set: string[] = []): Promise<string> {
    const copy = join(work, `notes-${values}-${set.join(',').replace(/[^a-z0-9]+/gi, '-')}`);
    cpSync(CHART, copy, { recursive: true });
    writeFileSync(join(copy, 'notes-src.txt'), readFileSync(join(CHART, 'templates/NOTES.txt')));
    writeFileSync(join(copy, 'templates/zz-notes.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: |\n    {{- tpl (.Files.Get "notes-src.txt") . | nindent 4 }}\n');
    const { docs } = await render(values, set, copy);
    return one(docs, 'ConfigMap', 'notes')['data']['notes'] as string;
  }

  test('tells how to connect: port-forward, curl, claude mcp add and the public URL', async () => {
    const text = await notes('sidecar');
    assert.match(text, /kubectl -n gatehouse-test port-forward svc\/gh-gatehouse 8080:8080/);
    assert.match(text, /curl -s http:\/\/127\.0\.0\.1:8080\/mcp/);
    assert.match(text, /claude mcp add --transport http gatehouse http:\/\/127\.0\.0\.1:8080\/mcp --header "Authorization: Bearer \$GATEHOUSE_TOKEN"/);
    assert.match(text, /https:\/\/mcp\.example\.com\/mcp/);
    assert.match(text, /checksum\/config/);
  });

  test('says which store is in use, and warns when several replicas each keep their own SQLite file', async () => {
    const sidecar = await notes('sidecar');
    assert.match(sidecar, /State and audit log: SQLite at \/data\/gatehouse\.db on an emptyDir: it is lost with the pod/);
    assert.match(sidecar, /WARNING: 2 replicas with the SQLite store\. Each pod keeps its own file/);
    const persistent = await notes('persistent');
    assert.match(persistent, /SQLite at \/data\/gatehouse\.db on the PersistentVolumeClaim gh-gatehouse-data \(kept on uninstall\)/);
    assert.doesNotMatch(persistent, /WARNING/);
    const redis = await notes('everything');
    assert.match(redis, /State and audit log: Redis through Sentinel \(gatehouse\), shared by every replica \(URL from Secret gatehouse-redis, key url\), key prefix "files-gw:"/);
    assert.doesNotMatch(redis, /WARNING/);
    assert.match(redis, /exec deploy\/gatehouse-all -c gatehouse -- node \/app\/dist\/main\.js audit verify/);
  });

  test('with several replicas, says how a legacy session stays on its pod, and warns when the Service balances every request', async () => {
    const sidecar = await notes('sidecar');
    assert.match(sidecar, /hash by the Mcp-Session-Id header .*\n.*upstream-hash-by: "\$http_mcp_session_id"/);
    assert.doesNotMatch(sidecar, /sessionAffinity: None/);
    assert.match(await notes('sidecar', ['service.sessionAffinity=None']), /WARNING: several replicas and service\.sessionAffinity: None/);
    assert.doesNotMatch(await notes('persistent'), /Mcp-Session-Id/, 'one replica: nothing to say');
  });

  test('with the admin API on, tells how to reach it: its Service or the pod through port-forward', async () => {
    const everything = await notes('everything');
    assert.match(everything, /Admin API .*port "admin" \(9470\) of the pod, and of the Service gatehouse-all-admin for the peers in networkPolicy\.admin\.from/);
    assert.match(everything, /port-forward svc\/gatehouse-all-admin 9465:9471/);
    assert.match(everything, /or an access token of the groups sre/);
    const podOnly = await notes('sidecar', ['admin.enabled=true', 'admin.token.secretFile.name=gh-admin', 'admin.token.secretFile.key=token']);
    assert.match(podOnly, /port "admin" \(9465\) of the pod, in no Service/);
    assert.match(podOnly, /port-forward deploy\/gh-gatehouse 9465:9465/);
    assert.doesNotMatch(await notes('sidecar'), /Admin API/);
  });

  // The image deployed is image.tag (or image.digest) when set; the chart's appVersion is only its default,
  // and printing it named a version the pods may not run.
  test('names the Gatehouse image the pods run: image.tag or image.digest when set, the appVersion otherwise', async () => {
    assert.match(await notes('sidecar'), /^Gatehouse \(registry\.example\.com\/platform\/gatehouse:0\.1\.0\) is installed as "gh"/m);
    const tagged = await notes('sidecar', ['image.tag=2.3.4']);
    assert.match(tagged, /^Gatehouse \(registry\.example\.com\/platform\/gatehouse:2\.3\.4\) is installed as "gh"/m);
    assert.doesNotMatch(tagged, /0\.1\.0/);
    const digest = `sha256:${'c'.repeat(64)}`;
    assert.match(await notes('sidecar', [`image.digest=${digest}`]), new RegExp(`^Gatehouse \\(registry\\.example\\.com/platform/gatehouse@${digest}\\) is installed`, 'm'));
  });

  test('for OAuth, names the protected resource metadata instead of an API key', async () => {
    const text = await notes('standalone');
    assert.match(text, /access token from your authorization server/);
    assert.match(text, /https:\/\/search\.mcp\.example\.com\/\.well-known\/oauth-protected-resource\/mcp/);
    assert.match(text, /http:\/\/search-mcp\.tools\.svc\.cluster\.local:8000\/mcp/);
  });
});

// ---- helm test: gatehouse doctor ---------------------------------------------------------------------------

describe('helm test (gatehouse doctor)', () => {
  const doctorPod = (docs: Manifest[]): Manifest => one(docs, 'Pod');
  const mounts = (c: Manifest): Map<string, Manifest> => new Map((c['volumeMounts'] as Manifest[]).map((m) => [m['mountPath'], m]));
  const volumes = (spec: Manifest): Map<string, Manifest> => new Map((spec['volumes'] as Manifest[]).map((v) => [v['name'], v]));

  for (const name of VALUES_NAMES) {
    test(`${name}: a test hook pod runs doctor with the Deployment's image, config, env and secret mounts`, async () => {
      const { docs } = await render(name);
      const pod = doctorPod(docs);
      assert.equal(pod['metadata']['annotations']['helm.sh/hook'], 'test');
      assert.equal(pod['spec']['restartPolicy'], 'Never');
      // Not selected by the Service (nor the PDB or the NetworkPolicy, which use the same labels): no traffic.
      const selector = mcpService(docs)['spec']['selector'] as Record<string, string>;
      assert.ok(!Object.entries(selector).every(([k, v]) => pod['metadata']['labels'][k] === v), 'the Service selects the test pod');
      const gh = container(docs, 'gatehouse');
      assert.equal(pod['spec']['containers'].length, 1);
      const doctor = pod['spec']['containers'][0] as Manifest;
      assert.equal(doctor['image'], gh['image']);
      assert.deepEqual((doctor['args'] as string[]).slice(0, 3), ['doctor', '--config', '/etc/gatehouse/gatehouse.yaml']);
      assert.deepEqual(doctor['env'], gh['env']);
      assert.deepEqual(doctor['securityContext'], gh['securityContext']);
      for (const key of ['securityContext', 'serviceAccountName', 'automountServiceAccountToken', 'imagePullSecrets']) assert.deepEqual(pod['spec'][key], podSpec(docs)[key], key);
      // The config map and every secret at the same paths, from the same volumes.
      for (const [path, mount] of mounts(gh)) {
        if (path === '/data') continue;
        const own = mounts(doctor).get(path);
        assert.ok(own, `no mount at ${path}`);
        assert.equal(own['readOnly'], mount['readOnly']);
        assert.deepEqual(volumes(pod['spec']).get(own['name']), volumes(podSpec(docs)).get(mount['name']), path);
      }
    });
  }

  test('sidecar mode: the MCP server runs beside the doctor as a native sidecar, which the doctor waits for', async () => {
    const { docs } = await render('sidecar', ['egressProxy.enabled=true']);
    const pod = doctorPod(docs);
    const server = container(docs, 'mcp-server');
    assert.equal(pod['spec']['initContainers'].length, 1);
    const sidecar = pod['spec']['initContainers'][0] as Manifest;
    assert.equal(sidecar['restartPolicy'], 'Always');
    for (const key of ['name', 'image', 'args', 'ports', 'securityContext', 'resources']) assert.deepEqual(sidecar[key], server[key], key);
    // The server's own env, without the egress proxy's: no proxy runs in the test pod.
    assert.ok((server['env'] as Manifest[]).some((e) => e['name'] === 'HTTP_PROXY'));
    assert.deepEqual(sidecar['env'], (server['env'] as Manifest[]).filter((e) => !/^(https?_proxy|no_proxy|GATEHOUSE_EGRESS_PROXY_TOKEN)$/i.test(e['name'])));
    assert.deepEqual(pod['spec']['containers'][0]['args'], ['doctor', '--config', '/etc/gatehouse/gatehouse.yaml', '--wait-ms', '60000']);
    assert.ok(mounts(sidecar).get('/tmp'), 'the server has a writable /tmp');
  });

  // A mesh that injects its proxy by a pod annotation or label (or is kept out by one: Istio's
  // sidecar.istio.io/inject, Linkerd's linkerd.io/inject) must see the test pod as it sees the Deployment's
  // pods: without them the test pod got a proxy the real pods do not have (and, as a proxy does not exit, never
  // completed), or none where the mesh's policy requires one, so the doctor could not reach the upstream.
  test("the test pod carries podAnnotations and podLabels, under the chart's own hook keys and labels", async () => {
    const { docs } = await render('sidecar', ['podAnnotations.linkerd\\.io/inject=disabled', 'podAnnotations.helm\\.sh/hook=post-install', 'podLabels.team=platform', 'podLabels.app\\.kubernetes\\.io/component=server']);
    const pod = doctorPod(docs);
    assert.equal(pod['metadata']['annotations']['linkerd.io/inject'], 'disabled');
    assert.equal(pod['metadata']['annotations']['helm.sh/hook'], 'test', 'the hook annotation stays the chart\'s');
    assert.equal(pod['metadata']['labels']['team'], 'platform');
    assert.equal(pod['metadata']['labels']['app.kubernetes.io/component'], 'doctor', 'the component label stays the chart\'s');
    const template = deployment(docs)['spec']['template']['metadata'];
    assert.equal(template['annotations']['linkerd.io/inject'], 'disabled');
    // Still never selected by the Service.
    const selector = mcpService(docs)['spec']['selector'] as Record<string, string>;
    assert.ok(!Object.entries(selector).every(([k, v]) => pod['metadata']['labels'][k] === v), 'the Service selects the test pod');
  });

  // A namespace whose ResourceQuota admits pods of one priority class only refused the test pod (it had none)
  // while the Deployment's pods ran: `helm test` failed on a healthy release.
  test("the test pod runs at the Deployment's priorityClassName, and has none when none is set", async () => {
    const { docs } = await render('sidecar', ['priorityClassName=platform-critical']);
    assert.equal(doctorPod(docs)['spec']['priorityClassName'], 'platform-critical');
    assert.equal(podSpec(docs)['priorityClassName'], 'platform-critical');
    const defaults = await render('sidecar');
    assert.equal(doctorPod(defaults.docs)['spec']['priorityClassName'], undefined);
  });

  // The server's /tmp (server-tmp) was sized by tmpVolume.sizeLimit, Gatehouse's own /tmp: a server that needs
  // more scratch space could get it only by giving Gatehouse as much.
  test("server.tmpVolume.sizeLimit sizes the server's /tmp, in the Deployment and the test pod, apart from Gatehouse's", async () => {
    const sizeOf = (spec: Manifest, name: string): unknown => volumes(spec).get(name)?.['emptyDir']?.['sizeLimit'];
    const { docs } = await render('sidecar', ['server.tmpVolume.sizeLimit=2Gi', 'tmpVolume.sizeLimit=32Mi']);
    for (const [where, spec] of [['Deployment', podSpec(docs)], ['test pod', doctorPod(docs)['spec']]] as const) {
      assert.equal(sizeOf(spec, 'server-tmp'), '2Gi', where);
      assert.equal(sizeOf(spec, 'tmp'), '32Mi', where);
    }
    const defaults = await render('sidecar');
    assert.equal(sizeOf(podSpec(defaults.docs), 'server-tmp'), '64Mi', 'the default is the size it had');
  });

  test('sidecar mode before Kubernetes 1.29 (no native sidecars): the doctor skips the upstreams', async () => {
    const { docs } = await render('sidecar', [], CHART, '1.28.0');
    const pod = doctorPod(docs);
    assert.equal(pod['spec']['initContainers'], undefined);
    assert.deepEqual(pod['spec']['containers'][0]['args'], ['doctor', '--config', '/etc/gatehouse/gatehouse.yaml', '--skip', 'upstreams']);
  });

  test('standalone: the upstream Service is checked from the pod; the SQLite store on an emptyDir as a new pod meets it', async () => {
    const { docs } = await render('standalone');
    const pod = doctorPod(docs);
    assert.equal(pod['spec']['initContainers'], undefined);
    assert.deepEqual(pod['spec']['containers'][0]['args'], ['doctor', '--config', '/etc/gatehouse/gatehouse.yaml']);
    const data = mounts(pod['spec']['containers'][0]).get('/data');
    assert.ok(volumes(pod['spec']).get(data?.['name'])?.['emptyDir']);
  });

  test('persistent: the store is not checked, and its ReadWriteOnce claim is left to the running pod', async () => {
    const { docs } = await render('persistent');
    const pod = doctorPod(docs);
    assert.deepEqual(pod['spec']['containers'][0]['args'], ['doctor', '--config', '/etc/gatehouse/gatehouse.yaml', '--skip', 'store']);
    assert.ok(!(pod['spec']['volumes'] as Manifest[]).some((v) => v['persistentVolumeClaim']));
    assert.equal(mounts(pod['spec']['containers'][0]).get('/data'), undefined);
  });
});
