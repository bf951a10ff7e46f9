// What a stdio child inherits of Gatehouse's NODE_OPTIONS: everything but the inspector's flags, which are
// for debugging Gatehouse (see test/integration/stdio-node-options-inspector.test.ts for a real child).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withoutInspector } from '../../../src/upstream/stdio-process.js';

test('the inspector flags are left out, in each form; the rest is kept as written', () => {
  assert.equal(withoutInspector(undefined), undefined);
  assert.equal(withoutInspector(''), undefined);
  assert.equal(withoutInspector('--inspect'), undefined);
  assert.equal(withoutInspector('--inspect-brk=0.0.0.0:9229 --max-old-space-size=512'), '--max-old-space-size=512');
  assert.equal(withoutInspector('--inspect-port 9230 --use-openssl-ca'), '--use-openssl-ca');
  assert.equal(withoutInspector('--debug-port=9230 --inspect-wait'), undefined);
  assert.equal(withoutInspector('--require "/opt/my hooks/a.js" --inspect'), '--require "/opt/my hooks/a.js"');
  // Not the inspector's: kept.
  assert.equal(withoutInspector('--inspector-something --trace-warnings'), '--inspector-something --trace-warnings');
});
