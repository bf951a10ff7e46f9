// The architecture, checked (run by test/architecture.test.ts in `npm test`). Folders form layers; a
// request goes down them once (edge → pipeline stages → upstream), never back up:
//   protocol, net → errors.ts → pipeline → log → config → policy, auth → upstream → catalog → metrics
//   → edge → gateway.ts → cli → main.ts
// The test also refuses any import cycle between folders, which these rules alone would not name.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-module-cycles',
      severity: 'error',
      comment: 'A module that imports itself through others cannot be understood or loaded on its own.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'protocol-is-a-leaf',
      severity: 'error',
      comment: 'Everything spec-shaped lives in protocol/ and depends on nothing else of Gatehouse.',
      from: { path: '^src/protocol/' },
      to: { path: '^src/', pathNot: '^src/protocol/' },
    },
    {
      name: 'upstream-not-edge',
      severity: 'error',
      comment: 'Adapters return an Outcome; only the edge writes HTTP.',
      from: { path: '^src/upstream/' },
      to: { path: '^src/edge/' },
    },
    {
      name: 'upstream-not-auth',
      severity: 'error',
      comment: 'Who is calling reaches adapters as the Principal of the call context, never through auth/.',
      from: { path: '^src/upstream/' },
      to: { path: '^src/auth/' },
    },
    {
      name: 'upstream-not-catalog',
      severity: 'error',
      comment: 'The catalog and the upstreams meet only through the ports in pipeline/.',
      from: { path: '^src/upstream/' },
      to: { path: '^src/catalog/' },
    },
    {
      name: 'catalog-not-upstream',
      severity: 'error',
      comment: 'The catalog and the upstreams meet only through the ports in pipeline/.',
      from: { path: '^src/catalog/' },
      to: { path: '^src/upstream/' },
    },
    {
      name: 'nothing-imports-cli',
      severity: 'error',
      comment: 'The CLI is the outermost layer; only the process entry starts it.',
      from: { path: '^src/', pathNot: ['^src/cli/', '^src/main\\.ts$'] },
      to: { path: '^src/cli/' },
    },
    {
      name: 'pipeline-below-stages',
      severity: 'error',
      comment: 'pipeline/ is the seam every stage builds on; it knows none of them.',
      from: { path: '^src/pipeline/' },
      to: { path: '^src/', pathNot: ['^src/pipeline/', '^src/protocol/', '^src/errors\\.ts$'] },
    },
  ],
  options: {
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
