// The configs the chart renders pass `gatehouse check-config`, run as a user would (issue 15 item 2): for
// each values file in charts/gatehouse/ci/, `helm template` renders the ConfigMap's gatehouse.yaml, and the
// built CLI checks it with --env-optional, since the secrets it names live in the cluster, not here.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { helmBinary } from '../helpers/helm.js';
import { ROOT, runCli } from '../helpers/cli.js';

const CHART = join(ROOT, 'charts/gatehouse');

for (const values of readdirSync(join(CHART, 'ci')).filter((f) => f.endsWith('-values.yaml'))) {
  test(`the gatehouse.yaml rendered with ci/${values} passes check-config --env-optional`, async () => {
    const rendered = execFileSync(helmBinary(), ['template', 'gh', CHART, '--kube-version', '1.37.0', '-f', join(CHART, 'ci', values)], { encoding: 'utf8', timeout: 60_000 });
    const maps = parseAllDocuments(rendered)
      .map((d) => d.toJS() as { kind?: string; data?: Record<string, string> } | null)
      .filter((d) => d?.kind === 'ConfigMap' && typeof d.data?.['gatehouse.yaml'] === 'string');
    assert.equal(maps.length, 1, 'one ConfigMap holds gatehouse.yaml');
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-chart-config-'));
    try {
      const file = join(dir, 'gatehouse.yaml');
      writeFileSync(file, maps[0]!.data!['gatehouse.yaml']!);
      const r = await runCli(['check-config', '--env-optional', file]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /: ok/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
