// Tool argument checks (2026-07-28/server/tools.mdx §Tool: 2020-12 by default; draft-07 when $schema names
// it; §Error Handling: input validation failures are isError results the model can act on).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toWire } from '../../../src/errors.js';
import { ArgumentSchemas, invalidArguments } from '../../../src/policy/argument-schemas.js';
import { createLogger } from '../../../src/log/logger.js';

const logs: string[] = [];
const schemas = new ArgumentSchemas(createLogger('warn', (l) => logs.push(l)));

test('2020-12 by default: prefixItems and dependentRequired are understood', () => {
  const schema = { type: 'object', properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }] } }, dependentRequired: { a: ['b'] } };
  assert.equal(schemas.check('t', schema, { pair: ['x', 1] }), undefined);
  const bad = schemas.check('t', schema, { pair: [1, 'x'], a: 1 });
  assert.ok(bad && bad.length >= 2, JSON.stringify(bad));
  assert.ok(bad.some((p) => p.path === '/pair/0'));
});

test('draft-07 when $schema says so: items as a tuple', () => {
  const schema = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }] } } };
  assert.equal(schemas.check('t', schema, { pair: ['x', 1] }), undefined);
  assert.deepEqual(schemas.check('t', schema, { pair: ['x', 'y'] }), [{ path: '/pair/1', message: 'must be integer' }]);
});

test('2019-09 when $schema says so (basic/index.mdx §Schema Dialect: dialects beyond 2020-12 may be supported): its schemas are checked, not skipped', () => {
  const schema = { $schema: 'https://json-schema.org/draft/2019-09/schema', type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], dependentRequired: { n: ['unit'] } };
  assert.equal(schemas.check('t2019', schema, { n: 1, unit: 'kg' }), undefined);
  assert.deepEqual(schemas.check('t2019', schema, { n: 1 }), [{ path: '(arguments)', message: 'must have property unit when property n is present' }]);
  assert.deepEqual(schemas.check('t2019', schema, {}), [{ path: '(arguments)', message: "must have required property 'n'" }]);
});

test('missing and extra properties are named; no arguments counts as {}', () => {
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false };
  assert.deepEqual(schemas.check('t', schema, undefined), [{ path: '(arguments)', message: "must have required property 'n'" }]);
  assert.deepEqual(schemas.check('t', schema, { n: 1, extra: true }), [{ path: '(arguments)', message: 'must NOT have additional properties "extra"' }]);
});

test('a schema with an external $ref is never fetched: the check is skipped and a warning logged', () => {
  assert.equal(schemas.check('remote', { type: 'object', properties: { a: { $ref: 'https://example.com/schema.json' } } }, { a: 1 }), undefined);
  assert.ok(logs.some((l) => l.includes('tool inputSchema cannot be compiled')));
});

test('the refusal is a tool result with isError and structuredContent.error.code = invalid_arguments', () => {
  const result = toWire(invalidArguments('calc', [{ path: '/n', message: 'must be integer' }]), { era: 'legacy', id: 1, callId: 'c' }).body.result!;
  assert.equal(result.isError, true);
  assert.deepEqual(result.structuredContent, { error: { code: 'invalid_arguments', message: 'Invalid arguments for tool "calc": /n must be integer', errors: [{ path: '/n', message: 'must be integer' }] } });
});
