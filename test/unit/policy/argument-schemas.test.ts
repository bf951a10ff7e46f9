// Tool argument checks (2026-07-28/server/tools.mdx §Tool: 2020-12 by default; draft-07 when $schema names
// it; §Error Handling: input validation failures are isError results the model can act on).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toWire } from '../../../src/errors.js';
import { ArgumentSchemas, invalidArguments, schemaUnsupported, type Uncheckable } from '../../../src/policy/argument-schemas.js';
import { createLogger } from '../../../src/log/logger.js';

const logs: string[] = [];
const schemas = new ArgumentSchemas(createLogger('warn', (l) => logs.push(l)));

test('2020-12 by default: prefixItems and dependentRequired are understood', () => {
  const schema = { type: 'object', properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }] } }, dependentRequired: { a: ['b'] } };
  assert.equal(schemas.check('t', schema, { pair: ['x', 1] }), undefined);
  const bad = schemas.check('t', schema, { pair: [1, 'x'], a: 1 });
  assert.ok(Array.isArray(bad) && bad.length >= 2, JSON.stringify(bad));
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

test('arguments named like inherited members (toString, constructor) are required and checked as any other, in every dialect', () => {
  // Without own properties only, a left-out `toString` was found on the prototype and counted as given.
  for (const $schema of [undefined, 'http://json-schema.org/draft-07/schema#', 'https://json-schema.org/draft/2019-09/schema']) {
    const schema = { ...($schema ? { $schema } : {}), type: 'object', properties: { constructor: { type: 'string' }, toString: { type: 'string' } }, required: ['constructor', 'toString'] };
    assert.deepEqual(schemas.check(`inh-${$schema}`, schema, {}), [
      { path: '(arguments)', message: "must have required property 'constructor'" },
      { path: '(arguments)', message: "must have required property 'toString'" },
    ], String($schema));
    assert.equal(schemas.check(`inh-${$schema}`, schema, JSON.parse('{"constructor":"a","toString":"b"}')), undefined, String($schema));
  }
});

test('a schema Gatehouse cannot check says why, never "no problems" (basic/index.mdx §Schema Dialect, §$ref Resolution)', () => {
  // An external $ref is never fetched, and the schema is not treated as permissive.
  const remote = schemas.check('remote', { type: 'object', properties: { a: { $ref: 'https://example.com/schema.json' } } }, { a: 1 });
  assert.match((remote as Uncheckable).uncheckable, /refers to a schema outside itself \("?https:\/\/example\.com\/schema\.json"?\), which Gatehouse does not fetch/);
  assert.ok(logs.some((l) => l.includes('a tool schema cannot be checked')));
  // A dialect other than the three is an error naming it, never compiled as if it were 2020-12.
  const draft04 = schemas.check('old', { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }, {});
  assert.match((draft04 as Uncheckable).uncheckable, /dialect "?http:\/\/json-schema\.org\/draft-04\/schema#"? is not one Gatehouse supports \(2020-12 \(the default\), 2019-09, draft-07, draft-06\)/);
  const broken = schemas.check('broken', { type: 'object', properties: { a: { type: 'no-such-type' } } }, {});
  assert.match((broken as Uncheckable).uncheckable, /is not a valid schema/);
  // draft-06 is checked (draft-07's engine with its meta-schema).
  const d6 = { $schema: 'http://json-schema.org/draft-06/schema#', type: 'object', properties: { n: { type: 'integer' } } };
  assert.equal(schemas.check('d6', d6, { n: 1 }), undefined);
  assert.deepEqual(schemas.check('d6', d6, { n: 'x' }), [{ path: '/n', message: 'must be integer' }]);
  // The 2020-12 URI itself is the default dialect.
  assert.equal(schemas.check('explicit', { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }, {}), undefined);
  // Output checks skip what they cannot check (logged); they have no call to refuse.
  assert.equal(schemas.checkOutput('remote', { type: 'object', properties: { a: { $ref: 'https://example.com/schema.json' } } }, { a: 1 }), undefined);
});

test('the refusal of a call whose schema cannot be checked is a tool result naming why: schema_unsupported', () => {
  const result = toWire(schemaUnsupported('old', { uncheckable: 'its dialect "draft-04" is not one Gatehouse supports' }), { era: 'legacy', id: 1, callId: 'c' }).body.result!;
  assert.equal(result.isError, true);
  assert.equal((result.structuredContent as { error: { code: string } }).error.code, 'schema_unsupported');
  assert.match((result.content as Array<{ text: string }>)[0]!.text, /inputSchema cannot be checked, because its dialect "draft-04" is not one Gatehouse supports/);
});

test('the refusal is a tool result with isError and structuredContent.error.code = invalid_arguments', () => {
  const result = toWire(invalidArguments('calc', [{ path: '/n', message: 'must be integer' }]), { era: 'legacy', id: 1, callId: 'c' }).body.result!;
  assert.equal(result.isError, true);
  assert.deepEqual(result.structuredContent, { error: { code: 'invalid_arguments', message: 'Invalid arguments for tool "calc": /n must be integer', errors: [{ path: '/n', message: 'must be integer' }] } });
});
