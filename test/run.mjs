// Runs every test file under test/ with node's test runner, TypeScript loaded through tsx.
// Node 20's --test takes no globs, so the files are listed here. Optional args filter by path substring.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('.', import.meta.url).pathname;
const filters = process.argv.slice(2);
function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (name === 'node_modules' || name === 'fixtures') return [];
    return statSync(p).isDirectory() ? walk(p) : name.endsWith('.test.ts') ? [p] : [];
  });
}
const files = walk(root)
  .map((p) => relative(process.cwd(), p))
  .filter((p) => filters.length === 0 || filters.some((f) => p.includes(f)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files], { stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
