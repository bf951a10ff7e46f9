// The front door's type checks of the fields Gatehouse reads, one row per field (shapes from
// shared/spec/schema/{2025-11-25,2026-07-28}/schema.json).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonRpcMessage, MessageKind } from '../../../src/protocol/jsonrpc.js';
import { paramShapeProblem } from '../../../src/protocol/param-shapes.js';

const HOSTILE = { toString: 1 };
const request = (method: string, params?: Record<string, unknown>): [MessageKind, JsonRpcMessage] => ['request', { jsonrpc: '2.0', id: 1, method, ...(params ? { params } : {}) }];
const notification = (method: string, params?: Record<string, unknown>): [MessageKind, JsonRpcMessage] => ['notification', { jsonrpc: '2.0', method, ...(params ? { params } : {}) } as JsonRpcMessage];
const response = (fields: Record<string, unknown>): [MessageKind, JsonRpcMessage] => ['response', { jsonrpc: '2.0', ...fields } as JsonRpcMessage];

const refused: Array<[string, [MessageKind, JsonRpcMessage], RegExp]> = [
  ['tools/call without a name', request('tools/call', {}), /params\.name is required/],
  ['tools/call without params', request('tools/call'), /params\.name is required/],
  ['tools/call name object', request('tools/call', { name: HOSTILE }), /params\.name must be a string/],
  ['tools/call arguments array', request('tools/call', { name: 'x', arguments: [1] }), /params\.arguments must be an object/],
  ['tools/call requestState number', request('tools/call', { name: 'x', requestState: 1 }), /params\.requestState must be a string/],
  ['prompts/get name number', request('prompts/get', { name: 5 }), /params\.name must be a string/],
  ['resources/read uri object', request('resources/read', { uri: HOSTILE }), /params\.uri must be a string/],
  ['resources/subscribe uri missing', request('resources/subscribe', {}), /params\.uri is required/],
  ['completion ref missing', request('completion/complete', { argument: {} }), /params\.ref is required/],
  ['completion prompt ref name object', request('completion/complete', { ref: { type: 'ref/prompt', name: HOSTILE }, argument: {} }), /params\.ref\.name must be a string/],
  ['completion resource ref uri missing', request('completion/complete', { ref: { type: 'ref/resource' }, argument: {} }), /params\.ref\.uri must be a string/],
  ['logging/setLevel level object', request('logging/setLevel', { level: HOSTILE }), /params\.level must be one of debug, info, notice, warning, error, critical, alert, emergency/],
  // logging.mdx §Error Handling: an invalid log level is -32602 (Gatehouse would otherwise hand it to a modern upstream in every request).
  ['logging/setLevel level unknown', request('logging/setLevel', { level: 'verbose' }), /params\.level must be one of/],
  ['logging/setLevel level in capitals', request('logging/setLevel', { level: 'DEBUG' }), /params\.level must be one of/],
  ['_meta logLevel unknown', request('tools/list', { _meta: { 'io.modelcontextprotocol/logLevel': 'trace' } }), /logLevel must be one of/],
  ['list cursor object', request('tools/list', { cursor: HOSTILE }), /params\.cursor must be a string/],
  ['initialize protocolVersion number', request('initialize', { protocolVersion: 2025 }), /params\.protocolVersion must be a string/],
  ['_meta not an object', request('ping', { _meta: 'x' }), /params\._meta must be an object/],
  ['_meta protocol version object', notification('notifications/initialized', { _meta: { 'io.modelcontextprotocol/protocolVersion': HOSTILE } }), /protocolVersion must be a string/],
  ['_meta client capabilities array', request('tools/list', { _meta: { 'io.modelcontextprotocol/clientCapabilities': [] } }), /clientCapabilities must be an object/],
  ['progressToken fraction', request('tools/list', { _meta: { progressToken: 1.5 } }), /progressToken must be a string or an integer/],
  ['cancelled requestId object', notification('notifications/cancelled', { requestId: HOSTILE }), /params\.requestId must be a string or an integer/],
  ['progress without progress', notification('notifications/progress', { progressToken: 't' }), /params\.progress is required/],
  // subscriptions.mdx, schema SubscriptionFilter: every field is read (a `resourceSubscriptions: 0` crashed the catalog's listen, fuzz seed 978031999).
  ['listen notifications array', request('subscriptions/listen', { notifications: [] }), /params\.notifications must be an object/],
  ['listen resourceSubscriptions 0', request('subscriptions/listen', { notifications: { resourceSubscriptions: 0 } }), /params\.notifications\.resourceSubscriptions must be an array of strings/],
  ['listen resourceSubscriptions string', request('subscriptions/listen', { notifications: { resourceSubscriptions: 'file:///a' } }), /resourceSubscriptions must be an array of strings/],
  ['listen resourceSubscriptions with an object', request('subscriptions/listen', { notifications: { resourceSubscriptions: ['file:///a', HOSTILE] } }), /resourceSubscriptions must be an array of strings/],
  ['listen toolsListChanged string', request('subscriptions/listen', { notifications: { toolsListChanged: 'yes' } }), /params\.notifications\.toolsListChanged must be true or false/],
  ['listen resourcesListChanged 1', request('subscriptions/listen', { notifications: { resourcesListChanged: 1 } }), /resourcesListChanged must be true or false/],
  ['response result array', response({ id: 1, result: [] }), /"result" must be an object/],
  ['response id object', response({ id: HOSTILE, result: {} }), /"id" must be a string or an integer/],
  ['response error code string', response({ id: 1, error: { code: 'x', message: 'm' } }), /"error\.code" must be an integer/],
];

for (const [name, [kind, message], expected] of refused) {
  test(`refused: ${name}`, () => {
    assert.match(paramShapeProblem(kind, message) ?? '(accepted)', expected);
  });
}

const accepted: Array<[string, [MessageKind, JsonRpcMessage]]> = [
  ['a plain tools/call', request('tools/call', { name: 'echo', arguments: { message: HOSTILE } })],
  ['an unknown method with any params', request('vendor/thing', { name: HOSTILE })],
  ['ping without params', request('ping')],
  ['logging/setLevel to each level of the schema', request('logging/setLevel', { level: 'warning' })],
  ['a modern request _meta logLevel', request('tools/list', { _meta: { 'io.modelcontextprotocol/logLevel': 'emergency' } })],
  ['initialize as clients send it', request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } })],
  ['a modern request _meta', request('tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, progressToken: 'p' } })],
  ['an error response without id', response({ id: null, error: { code: -32600, message: 'm' } })],
  ['a completion of an unknown ref type', request('completion/complete', { ref: { type: 'ref/other' }, argument: { name: 'a', value: '' } })],
  ['a listen for every kind', request('subscriptions/listen', { notifications: { toolsListChanged: true, promptsListChanged: false, resourcesListChanged: true, resourceSubscriptions: ['file:///a', 'fuzz://b'] } })],
  ['a listen for nothing, and one with a field of a later revision', request('subscriptions/listen', { notifications: { resourceSubscriptions: [], somethingNew: 1 } })],
];

for (const [name, [kind, message]] of accepted) {
  test(`accepted: ${name}`, () => {
    assert.equal(paramShapeProblem(kind, message), undefined);
  });
}
