// Proves the Dockerfile without a Docker engine. The test reads the Dockerfile and .dockerignore, then does
// what `docker build` and `docker run` would: copies the build context the build stage COPYs (filtered by
// .dockerignore) into a temporary stage root, runs the build stage's RUN commands there, assembles the
// runtime stage's filesystem from its COPY --from lines, and starts its ENTRYPOINT+CMD as the image's USER
// (when the test runs as root) with everything but the /data volume unwritable. Then /healthz, one tool call,
// the HEALTHCHECK command, and SIGTERM → exit 0; nothing may have been written outside /data.
// The base image's own files (node, tini) come from this machine; the runtime stage's RUN lines install
// and prepare those (apt-get, mkdir /data) and are emulated rather than run.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, posix } from 'node:path';
import { jsonResult, startFakeUpstream } from '../fixtures/upstreams/fake-upstream.js';
import { ROOT } from '../helpers/cli.js';
import { post, rpc } from '../helpers/http.js';

// ---------------------------------------------------------------------------------------------------------
// Dockerfile parsing: the instructions Gatehouse's Dockerfile uses, and an error for anything else, so a new
// instruction makes this test learn it instead of silently skipping it.

interface Instruction {
  op: string;
  args: string;
  line: number;
}

interface Stage {
  name: string | undefined;
  image: string;
  instructions: Instruction[];
}

const KNOWN = new Set(['FROM', 'WORKDIR', 'COPY', 'RUN', 'ENV', 'USER', 'EXPOSE', 'VOLUME', 'HEALTHCHECK', 'ENTRYPOINT', 'CMD', 'LABEL']);

function parseDockerfile(text: string): Stage[] {
  const instructions: Instruction[] = [];
  let buf = '';
  let start = 0;
  text.split(/\r?\n/).forEach((raw, i) => {
    // Comment and blank lines are dropped, also inside a continued instruction (as Docker does).
    if (/^\s*(#|$)/.test(raw)) return;
    if (buf === '') start = i + 1;
    const line = raw.trimEnd();
    if (line.endsWith('\\')) {
      buf += line.slice(0, -1) + ' ';
      return;
    }
    buf += line;
    const m = /^\s*([A-Za-z]+)\s+([\s\S]*)$/.exec(buf);
    if (!m) throw new Error(`Dockerfile:${start}: cannot parse "${buf}"`);
    const op = m[1]!.toUpperCase();
    if (!KNOWN.has(op)) throw new Error(`Dockerfile:${start}: this test does not know ${op}; teach it, or keep the Dockerfile to ${[...KNOWN].join(', ')}`);
    instructions.push({ op, args: m[2]!.trim(), line: start });
    buf = '';
  });
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m) throw new Error(`Dockerfile:${ins.line}: cannot parse FROM ${ins.args}`);
      stages.push({ image: m[1]!, name: m[2], instructions: [] });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`Dockerfile:${ins.line}: ${ins.op} before FROM`);
      stage.instructions.push(ins);
    }
  }
  return stages;
}

/** Shell-like words: whitespace-separated, with "double" and 'single' quotes and backslash escapes. */
function words(s: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | undefined;
  let has = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < s.length) cur += s[++i];
      else cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      has = true;
    } else if (c === '\\' && i + 1 < s.length) {
      cur += s[++i];
      has = true;
    } else if (/\s/.test(c)) {
      if (has || cur !== '') out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += c;
    }
  }
  if (has || cur !== '') out.push(cur);
  return out;
}

/** RUN/CMD/ENTRYPOINT/HEALTHCHECK CMD: exec form (a JSON array) as is, shell form through /bin/sh -c. */
function commandOf(args: string): { argv: string[]; exec: boolean } {
  if (args.startsWith('[')) {
    const argv = JSON.parse(args) as unknown;
    assert.ok(Array.isArray(argv) && argv.every((a) => typeof a === 'string'), `not a JSON array of strings: ${args}`);
    return { argv, exec: true };
  }
  return { argv: ['/bin/sh', '-c', args], exec: false };
}

function envPairs(args: string): Array<[string, string]> {
  const w = words(args);
  // Legacy `ENV KEY value with spaces`.
  if (w.length > 0 && !w[0]!.includes('=')) return [[w[0]!, w.slice(1).join(' ')]];
  return w.map((pair) => {
    const eq = pair.indexOf('=');
    return [pair.slice(0, eq), pair.slice(eq + 1)];
  });
}

interface Copy {
  from: string | undefined;
  sources: string[];
  dest: string;
}

function copyOf(ins: Instruction): Copy {
  const w = ins.args.startsWith('[') ? (JSON.parse(ins.args) as string[]) : words(ins.args);
  let from: string | undefined;
  const rest: string[] = [];
  for (const word of w) {
    if (rest.length === 0 && word.startsWith('--')) {
      const m = /^--([a-z-]+)(?:=(.*))?$/.exec(word);
      if (m?.[1] === 'from') from = m[2];
      else if (m?.[1] !== 'link' && m?.[1] !== 'chown' && m?.[1] !== 'chmod') throw new Error(`Dockerfile:${ins.line}: unsupported COPY flag ${word}`);
    } else rest.push(word);
  }
  assert.ok(rest.length >= 2, `Dockerfile:${ins.line}: COPY needs a source and a destination`);
  for (const p of rest) assert.ok(!/[$*?[]/.test(p), `Dockerfile:${ins.line}: variables and wildcards in COPY are not supported here: ${p}`);
  return { from, sources: rest.slice(0, -1), dest: rest.at(-1)! };
}

interface Healthcheck {
  argv: string[];
  exec: boolean;
  options: Record<string, string>;
}

function healthcheckOf(ins: Instruction): Healthcheck {
  const options: Record<string, string> = {};
  let rest = ins.args;
  for (let m = /^--([a-z-]+)=(\S+)\s+/.exec(rest); m; m = /^--([a-z-]+)=(\S+)\s+/.exec(rest)) {
    options[m[1]!] = m[2]!;
    rest = rest.slice(m[0].length);
  }
  const cmd = /^CMD\s+([\s\S]+)$/.exec(rest);
  if (!cmd) throw new Error(`Dockerfile:${ins.line}: HEALTHCHECK without CMD (${rest})`);
  return { ...commandOf(cmd[1]!), options };
}

/** `3s`, `1m30s`, `500ms` → milliseconds. */
function durationMs(s: string): number {
  let total = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  return total;
}

// ---------------------------------------------------------------------------------------------------------
// .dockerignore: Docker's rules (moby/patternmatcher). Patterns are cleaned, matched against the path and
// each of its parent directories, and the last matching pattern wins; `!` re-includes.

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      i++;
      if (glob[i + 1] === '/') {
        i++;
        re += '(?:.*/)?';
      } else re += '.*';
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i);
      re += end === -1 ? '\\[' : glob.slice(i, end + 1).replace(/^\[!/, '[^');
      if (end !== -1) i = end;
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

function dockerignore(text: string): (relPath: string) => boolean {
  const rules = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pattern = posix.normalize((negate ? l.slice(1) : l).trim()).replace(/^\/+/, '').replace(/\/+$/, '');
      return { negate, re: globToRegExp(pattern) };
    });
  return (relPath) => {
    const parts = relPath.split('/');
    const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let excluded = false;
    for (const rule of rules) if (candidates.some((c) => rule.re.test(c))) excluded = !rule.negate;
    return excluded;
  };
}

// ---------------------------------------------------------------------------------------------------------
// Filesystem helpers. A stage's filesystem is a temporary directory; container path /x is <root>/x.

function inRoot(root: string, containerPath: string): string {
  return join(root, posix.resolve('/', containerPath));
}

function filesUnder(dir: string, rel = ''): string[] {
  const st = lstatSync(join(dir, rel));
  if (!st.isDirectory()) return [rel];
  return readdirSync(join(dir, rel)).flatMap((name) => filesUnder(dir, rel === '' ? name : `${rel}/${name}`));
}

/** COPY semantics: a directory's contents go into dest; a file goes to dest, or into it when dest ends in `/`. */
function performCopy(copy: Copy, sourceRoot: string, exclude: ((p: string) => boolean) | undefined, destRoot: string, workdir: string): void {
  const destPath = posix.resolve(workdir, copy.dest);
  const destIsDir = copy.dest.endsWith('/') || copy.sources.length > 1;
  for (const source of copy.sources) {
    const rel = posix.normalize(posix.resolve('/', source)).slice(1);
    const abs = join(sourceRoot, rel);
    assert.ok(existsSync(abs), `COPY ${source}: not found${exclude ? ' in the build context' : ` in stage ${copy.from}`}`);
    const isDir = lstatSync(abs).isDirectory();
    if (!exclude) {
      // From another stage: everything, symlinks as they are (node_modules/.bin).
      const target = isDir || !destIsDir ? inRoot(destRoot, destPath) : inRoot(destRoot, posix.join(destPath, posix.basename(rel)));
      mkdirSync(dirname(target), { recursive: true });
      cpSync(abs, target, { recursive: true, verbatimSymlinks: true });
      continue;
    }
    const files = filesUnder(abs).filter((f) => !exclude(posix.join(rel, f)));
    assert.ok(files.length > 0, `COPY ${source}: excluded by .dockerignore, so not in the build context`);
    for (const f of files) {
      const target = isDir ? posix.join(destPath, f) : destIsDir ? posix.join(destPath, posix.basename(rel)) : destPath;
      mkdirSync(dirname(inRoot(destRoot, target)), { recursive: true });
      copyFileSync(join(abs, f), inRoot(destRoot, target));
    }
  }
}

/** Every path under `dir` (except `skip`) with what a write would change; compared before and after. */
function snapshot(dir: string, skip: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string): void => {
    const abs = join(dir, rel);
    if (abs === skip) return;
    const st = lstatSync(abs);
    out.set(rel, `${st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'f'} ${st.size} ${st.mtimeMs} ${st.mode}`);
    if (st.isDirectory()) for (const name of readdirSync(abs)) walk(rel === '' ? name : `${rel}/${name}`);
  };
  walk('');
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Processes: every one is started here, tracked, bounded in time and stopped by its pid.

const running = new Set<ChildProcess>();
const cleanups: Array<() => void | Promise<void>> = [];
after(async () => {
  for (const child of running) if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) kill(child, 'SIGKILL');
  for (const c of cleanups.reverse()) await c();
});

/** Signals the child, or its whole process group when it leads one (RUN commands start npm and its children). */
function kill(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(groupLeaders.has(child) ? -child.pid : child.pid, signal);
  } catch {
    // already gone
  }
}
const groupLeaders = new WeakSet<ChildProcess>();

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  timedOut: boolean;
}

interface SpawnOpts {
  cwd: string;
  env: NodeJS.ProcessEnv;
  uid?: number;
  gid?: number;
  timeoutMs: number;
  group?: boolean;
}

function runToEnd(argv: string[], opts: SpawnOpts): Promise<Finished> {
  const [cmd, ...args] = argv;
  const child = spawn(cmd!, args, { cwd: opts.cwd, env: opts.env, uid: opts.uid, gid: opts.gid, detached: opts.group === true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  if (opts.group) groupLeaders.add(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += String(d)));
  child.stderr!.on('data', (d) => (output += String(d)));
  return new Promise((resolve) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      kill(child, 'SIGKILL');
    }, opts.timeoutMs);
    child.on('error', (err) => (output += `\nspawn error: ${err.message}`));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, signal, output, timedOut });
    });
  });
}

function onPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) if (dir !== '' && existsSync(join(dir, name))) return join(dir, name);
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------

const dockerfileText = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const stages = parseDockerfile(dockerfileText);
const isExcluded = dockerignore(readFileSync(join(ROOT, '.dockerignore'), 'utf8'));
const runtime = stages.at(-1)!;
const of = (stage: Stage, op: string): Instruction[] => stage.instructions.filter((i) => i.op === op);
const last = (stage: Stage, op: string): Instruction | undefined => of(stage, op).at(-1);
const imageEnv = (stage: Stage): Record<string, string> => Object.fromEntries(of(stage, 'ENV').flatMap((i) => envPairs(i.args)));
const INITS = new Set(['tini', 'dumb-init', 'docker-init']);

test('the Dockerfile declares a multi-stage, non-root, health-checked image', () => {
  assert.ok(stages.length >= 2, 'multi-stage');
  assert.ok(runtime.image.startsWith('node:'), `runtime image is node: ${runtime.image}`);
  // The toolchain that builds and the node that runs here are the image's major version.
  const major = /^node:(\d+)/.exec(runtime.image)?.[1];
  assert.equal(process.versions.node.split('.')[0], major, 'this test runs the Node major the image ships');

  const user = last(runtime, 'USER')?.args;
  assert.ok(user !== undefined, 'USER is set');
  assert.match(user, /^\d+(:\d+)?$/, 'numeric USER, so Kubernetes can check runAsNonRoot');
  assert.notEqual(user.split(':')[0], '0', 'not root');

  const entrypoint = last(runtime, 'ENTRYPOINT');
  assert.ok(entrypoint, 'ENTRYPOINT');
  assert.ok(commandOf(entrypoint.args).exec, 'ENTRYPOINT in exec form: a shell as PID 1 would not pass signals on');
  const init = commandOf(entrypoint.args).argv[0]!;
  if (INITS.has(posix.basename(init))) {
    assert.ok(of(runtime, 'RUN').some((r) => r.args.includes(posix.basename(init))), `${init} is installed in the runtime stage`);
  }

  const hc = last(runtime, 'HEALTHCHECK');
  assert.ok(hc, 'HEALTHCHECK');
  const health = healthcheckOf(hc);
  assert.ok(health.exec, 'HEALTHCHECK CMD in exec form');
  assert.ok(durationMs(health.options.timeout ?? '30s') > 0);

  // EXPOSE names the port the health check probes, plus at most the metrics listener's default port.
  const env = imageEnv(runtime);
  const healthUrl = env.GATEHOUSE_HEALTHCHECK_URL;
  assert.ok(healthUrl, 'GATEHOUSE_HEALTHCHECK_URL has a default');
  assert.ok(health.argv.join(' ').includes('GATEHOUSE_HEALTHCHECK_URL'), 'the health check reads GATEHOUSE_HEALTHCHECK_URL');
  const exposed = of(runtime, 'EXPOSE').flatMap((i) => words(i.args)).map((p) => Number(p.replace(/\/tcp$/, '')));
  const schema = JSON.parse(readFileSync(join(ROOT, 'config/gatehouse.schema.json'), 'utf8')) as { properties: { metrics: { properties: { port: { default: number } } } } };
  assert.ok(exposed.includes(Number(new URL(healthUrl).port)), `EXPOSE ${exposed.join(' ')} includes the health check's port`);
  for (const p of exposed) assert.ok(p === Number(new URL(healthUrl).port) || p === schema.properties.metrics.properties.port.default, `EXPOSE ${p} is the MCP or the metrics port`);

  assert.ok(env.GATEHOUSE_CONFIG?.startsWith('/'), 'GATEHOUSE_CONFIG names where the config is mounted');
  assert.equal(env.NODE_ENV, 'production');
  const volumes = of(runtime, 'VOLUME').flatMap((i) => (i.args.startsWith('[') ? (JSON.parse(i.args) as string[]) : words(i.args)));
  assert.deepEqual(volumes, ['/data']);
  // Only the stage it names is copied from, and the runtime stage installs no npm packages.
  for (const c of of(runtime, 'COPY').map(copyOf)) assert.ok(c.from === undefined || stages.some((s) => s.name === c.from), `COPY --from=${c.from} names a stage`);
  for (const r of of(runtime, 'RUN')) assert.doesNotMatch(r.args, /\bnpm\b|\bnpx\b|\byarn\b/, 'no package installs in the runtime stage');
});

test('.dockerignore keeps the build context to what the build copies', () => {
  for (const p of ['node_modules', 'node_modules/x/index.js', 'dist/main.js', 'test/e2e/cli.test.ts', 'bench/run.ts', '.git/HEAD', 'data/gatehouse.db', '.env', 'docs/x.md', 'charts/gatehouse/values.yaml', 'x.log']) {
    assert.ok(isExcluded(p), `${p} is left out of the context`);
  }
  for (const p of ['package.json', 'package-lock.json', 'tsconfig.json', 'src/main.ts', 'src/log/logger.ts', 'config/gatehouse.schema.json']) {
    assert.ok(!isExcluded(p), `${p} is in the context`);
  }
});

test('the build and start commands work: production-only runtime, read-only but for /data, healthy, SIGTERM → 0', { timeout: 20 * 60_000 }, async (t) => {
  const build = stages.find((s) => runtime.instructions.some((i) => i.op === 'COPY' && copyOf(i).from === s.name));
  assert.ok(build && build !== runtime, 'the runtime stage copies from a build stage');
  const base = mkdtempSync(join(tmpdir(), 'gatehouse-dockerfile-'));
  cleanups.push(() => {
    chmodTree(base, (mode) => mode | 0o200);
    rmSync(base, { recursive: true, force: true });
  });
  chmodSync(base, 0o755);
  const buildRoot = join(base, 'build');
  const runRoot = join(base, 'runtime');

  // --- build stage: COPY from the context, RUN in order ---
  let workdir = '/';
  const buildEnv: Record<string, string> = {};
  // The test's own runner variables must not leak into npm; the cache is preferred so no fresh download is needed.
  const hostEnv: NodeJS.ProcessEnv = { ...process.env, npm_config_prefer_offline: 'true', npm_config_update_notifier: 'false' };
  delete hostEnv.NODE_TEST_CONTEXT;
  delete hostEnv.NODE_OPTIONS;
  for (const ins of build.instructions) {
    if (ins.op === 'WORKDIR') {
      workdir = posix.resolve(workdir, ins.args);
      mkdirSync(inRoot(buildRoot, workdir), { recursive: true });
    } else if (ins.op === 'ENV') Object.assign(buildEnv, Object.fromEntries(envPairs(ins.args)));
    else if (ins.op === 'COPY') {
      const copy = copyOf(ins);
      assert.equal(copy.from, undefined, 'the build stage copies from the context only');
      performCopy(copy, ROOT, isExcluded, buildRoot, workdir);
    } else if (ins.op === 'RUN') {
      const { argv } = commandOf(ins.args);
      const started = Date.now();
      const r = await runToEnd(argv, { cwd: inRoot(buildRoot, workdir), env: { ...hostEnv, ...buildEnv }, timeoutMs: 8 * 60_000, group: true });
      t.diagnostic(`RUN ${ins.args} (${Date.now() - started} ms)`);
      assert.ok(!r.timedOut && r.code === 0, `Dockerfile:${ins.line} RUN ${ins.args} failed (${r.timedOut ? 'timed out' : `exit ${r.code}`}):\n${r.output.slice(-4000)}`);
    } else assert.ok(['LABEL', 'USER'].includes(ins.op), `Dockerfile:${ins.line}: ${ins.op} in the build stage is not emulated here`);
  }
  // --ignore-scripts in `npm ci` is only safe while every production dependency that needs its install
  // script (a native module) is rebuilt by name afterwards.
  const lock = JSON.parse(readFileSync(inRoot(buildRoot, posix.join(workdir, 'package-lock.json')), 'utf8')) as { packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean; hasInstallScript?: boolean }> };
  if (build.instructions.some((i) => i.op === 'RUN' && /npm ci\b.*--ignore-scripts/.test(i.args))) {
    const rebuilt = new Set(build.instructions.filter((i) => i.op === 'RUN' && /npm rebuild\b/.test(i.args)).flatMap((i) => words(i.args).slice(2)));
    const scripted = Object.entries(lock.packages).filter(([p, v]) => p !== '' && v.hasInstallScript && !v.dev && !rebuilt.has(p.replace(/^node_modules\//, '')));
    assert.deepEqual(scripted.map(([p]) => p), [], 'production dependencies with install scripts that are not rebuilt by name');
  }

  // --- runtime stage: its COPY --from lines; its RUN lines set up the OS and are emulated below ---
  workdir = '/';
  const env: Record<string, string> = {};
  let user: string | undefined;
  for (const ins of runtime.instructions) {
    if (ins.op === 'WORKDIR') {
      workdir = posix.resolve(workdir, ins.args);
      mkdirSync(inRoot(runRoot, workdir), { recursive: true });
    } else if (ins.op === 'ENV') Object.assign(env, Object.fromEntries(envPairs(ins.args)));
    else if (ins.op === 'USER') user = ins.args;
    else if (ins.op === 'VOLUME') for (const v of ins.args.startsWith('[') ? (JSON.parse(ins.args) as string[]) : words(ins.args)) mkdirSync(inRoot(runRoot, v), { recursive: true });
    else if (ins.op === 'COPY') {
      const copy = copyOf(ins);
      if (copy.from === undefined) performCopy(copy, ROOT, isExcluded, runRoot, workdir);
      else {
        assert.equal(copy.from, build.name);
        performCopy(copy, buildRoot, undefined, runRoot, workdir);
      }
    }
  }
  const volume = inRoot(runRoot, '/data');
  assert.ok(existsSync(volume), '/data exists');

  // Production dependencies only: every dependency present, no dev-only package, no toolchain.
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
  const mainJs = commandOf(last(runtime, 'ENTRYPOINT')!.args).argv.find((a) => /^\/\S+\.js$/.test(a));
  assert.ok(mainJs, 'the ENTRYPOINT runs a script by its absolute path');
  const appDir = dirname(inRoot(runRoot, mainJs));
  const runtimeModules = join(appDir, '..', 'node_modules');
  for (const dep of Object.keys(pkg.dependencies)) assert.ok(existsSync(join(runtimeModules, dep, 'package.json')), `runtime has ${dep}`);
  for (const [p, v] of Object.entries(lock.packages)) {
    if (p.startsWith('node_modules/') && v.dev) assert.ok(!existsSync(join(appDir, '..', p)), `dev-only ${p} is not in the runtime stage`);
  }
  // npm prune may leave an emptied scope directory behind; what counts is that nothing is in it.
  const present = (p: string): boolean => existsSync(p) && (!lstatSync(p).isDirectory() || readdirSync(p).length > 0);
  // A dev dependency that a runtime package also needs (semver, say) stays, as npm keeps it: the lockfile says so.
  const devOnly = Object.keys(pkg.devDependencies).filter((d) => lock.packages[`node_modules/${d}`]?.dev === true);
  for (const dev of ['typescript', 'tsx', '@types', '.bin/tsc', '.bin/tsx', ...devOnly]) assert.ok(!present(join(runtimeModules, dev)), `${dev} is not in the runtime stage`);
  assert.ok(!existsSync(join(appDir, '..', 'src')) && !existsSync(join(appDir, '..', 'test')), 'no sources or tests in the runtime stage');

  // --- start it: the config mounted at $GATEHOUSE_CONFIG, a trivial upstream, as the image's user ---
  const upstream = await startFakeUpstream((_req, res, body) => jsonResult(res, body, { content: [{ type: 'text', text: 'pong' }] }));
  cleanups.push(() => upstream.close());
  const configPath = inRoot(runRoot, env.GATEHOUSE_CONFIG!);
  mkdirSync(dirname(configPath), { recursive: true });
  writeFileSync(configPath, `listen: { host: 127.0.0.1, port: 0 }\nauth: { anonymous: true }\nupstreams: [{ name: app, url: "${upstream.url}" }]\nlog: { level: info }\nshutdown: { graceMs: 2000 }\n`);
  // In a container with a read-only root, /tmp and $HOME are read-only too.
  for (const d of ['/tmp', '/home/node']) mkdirSync(inRoot(runRoot, d), { recursive: true });

  const [uidText, gidText] = (user ?? '').split(':');
  const asRoot = process.getuid?.() === 0;
  let ids: { uid?: number; gid?: number } = {};
  if (asRoot) {
    // Root may write anywhere; running as the image's USER makes "read-only but /data" real.
    ids = { uid: Number(uidText), gid: Number(gidText ?? uidText) };
    chownSync(volume, ids.uid!, ids.gid!);
  } else {
    chmodTree(runRoot, (mode) => mode & ~0o222);
    chmodSync(volume, 0o755);
  }
  const mapArg = (a: string): string => (a.startsWith('/') && existsSync(inRoot(runRoot, a.split('/')[1]!)) ? inRoot(runRoot, a) : a);
  const containerEnv: Record<string, string> = {
    PATH: hostEnv.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: inRoot(runRoot, '/home/node'),
    TMPDIR: inRoot(runRoot, '/tmp'),
    // tini warns unless it is PID 1 or a subreaper; as a subreaper it also reaps orphans as it would in the container.
    TINI_SUBREAPER: '1',
    ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, mapArg(v)])),
  };
  const resolveArgv = (argv: string[]): string[] => {
    const out = argv.map(mapArg);
    const init = posix.basename(out[0]!);
    if (!INITS.has(init) || existsSync(out[0]!)) return out;
    // The init comes from the base image's packages; use this machine's, or start what it wraps without it.
    const local = onPath(init, containerEnv.PATH);
    if (local) return [local, ...out.slice(1)];
    t.diagnostic(`${init} is not installed on this machine; starting the command it wraps without it`);
    return out.slice(out[1] === '--' ? 2 : 1);
  };
  const argv = resolveArgv([...commandOf(last(runtime, 'ENTRYPOINT')!.args).argv, ...commandOf(last(runtime, 'CMD')!.args).argv]);
  const cwd = inRoot(runRoot, workdir);
  const before = snapshot(runRoot, volume);

  const [cmd, ...args] = argv;
  const child = spawn(cmd!, args, { cwd, env: containerEnv, ...ids, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let stderr = '';
  child.stdout.resume();
  child.stderr.on('data', (d) => (stderr += String(d)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
  void exited.then(() => running.delete(child));
  const logLines = (): Array<Record<string, unknown>> =>
    stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const listening = await Promise.race([
    (async () => {
      for (let deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
        const line = logLines().find((l) => l.msg === 'gatehouse listening');
        if (line) return String(line.url);
      }
      return undefined;
    })(),
    exited.then(() => undefined),
  ]);
  assert.ok(listening, `gatehouse did not start from the image's entrypoint (${argv.join(' ')}):\n${stderr}`);
  const origin = new URL(listening).origin;
  if (ids.uid !== undefined && existsSync(`/proc/${child.pid}/status`)) {
    assert.match(readFileSync(`/proc/${child.pid}/status`, 'utf8'), new RegExp(`\\nUid:\\s+${ids.uid}\\s`), `runs as uid ${ids.uid}`);
  }

  const healthz = await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(5000) });
  assert.equal(healthz.status, 200);
  const call = await post(listening, rpc(1, 'tools/call', { name: 'ping' }), undefined, AbortSignal.timeout(10_000));
  assert.equal(call.status, 200, call.text);
  assert.equal(call.json().result.content[0].text, 'pong');

  // The HEALTHCHECK command, as Docker runs it: same env and user, bounded by its --timeout (with slack for a busy CI).
  const hc = healthcheckOf(last(runtime, 'HEALTHCHECK')!);
  const hcEnv = { ...containerEnv, GATEHOUSE_HEALTHCHECK_URL: `${origin}/healthz` };
  const hcTimeout = Math.max(durationMs(hc.options.timeout ?? '30s'), 10_000);
  const healthy = await runToEnd(resolveArgv(hc.argv), { cwd, env: hcEnv, ...ids, timeoutMs: hcTimeout });
  assert.equal(healthy.code, 0, `HEALTHCHECK failed against a running gatehouse: ${healthy.output}`);

  kill(child, 'SIGTERM');
  const stop = setTimeout(() => kill(child, 'SIGKILL'), 15_000);
  const exit = await exited;
  clearTimeout(stop);
  assert.deepEqual(exit, { code: 0, signal: null }, `SIGTERM → exit 0; stderr:\n${stderr}`);
  assert.ok(logLines().some((l) => l.msg === 'signal received' && l.signal === 'SIGTERM'), 'the signal reached gatehouse');

  const unhealthy = await runToEnd(resolveArgv(hc.argv), { cwd, env: hcEnv, ...ids, timeoutMs: hcTimeout });
  assert.notEqual(unhealthy.code, 0, 'HEALTHCHECK fails once gatehouse is gone');

  const afterRun = snapshot(runRoot, volume);
  const changed = [...new Set([...before.keys(), ...afterRun.keys()])].filter((k) => before.get(k) !== afterRun.get(k));
  assert.deepEqual(changed, [], 'nothing was written outside /data');
});

/** chmod -R: `change` maps each file's mode to its new one; symlinks have no mode of their own. */
function chmodTree(dir: string, change: (mode: number) => number): void {
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) return;
  chmodSync(dir, change(st.mode & 0o7777));
  if (st.isDirectory()) for (const name of readdirSync(dir)) chmodTree(join(dir, name), change);
}
