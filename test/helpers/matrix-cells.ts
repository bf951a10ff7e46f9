// The operation axis of the era matrices (era-matrix.test.ts over HTTP upstreams, era-matrix-stdio.test.ts
// over stdio upstreams) and the code that runs one cell: a client of one kind, at one URL, doing one
// operation against one upstream. Every upstream of the matrices offers server-everything's tool surface
// (the v2 fixtures mirror it, test/fixtures/upstreams/matrix-tools.ts), so one table fits them all. The spec
// sections each operation exercises are cited in the test files, next to the transports they apply to.

import assert from 'node:assert/strict';
import {
  connectClient,
  describeError,
  describeWire,
  textOf,
  type AnyClientKind,
  type ElicitAnswer,
  type MatrixClient,
  type ProgressEvent,
  type WireRecord,
} from './matrix-clients.js';

/** The tools both upstreams offer (the v2 fixture mirrors server-everything's names and shapes). */
export const COMMON_TOOLS = ['echo', 'trigger-long-running-operation', 'trigger-elicitation-request'];
const ELICIT_MESSAGE = 'Please provide inputs for the following fields:';

/** What a cell needs to know of its upstream. */
export interface MatrixUpstream {
  label: string;
  /** A tool only this upstream has, so tools/list proves which server answered. */
  marker: string;
}

interface CellContext {
  client: MatrixClient;
  upstream: MatrixUpstream;
  /** Unique per cell, woven into echoed text and elicitation answers. */
  tag: string;
}

export interface OperationSpec {
  label: string;
  /** What the client's elicitation handler answers for this operation. */
  elicitAnswer?(tag: string): ElicitAnswer;
  run(cx: CellContext): Promise<void>;
}

export const OPERATIONS: readonly OperationSpec[] = [
  {
    label: 'tools/list',
    async run({ client, upstream }) {
      const names = await client.listToolNames();
      for (const expected of [...COMMON_TOOLS, upstream.marker]) {
        assert.ok(names.includes(expected), `tools/list lacks ${expected}: ${names.join(', ')}`);
      }
    },
  },
  {
    label: 'tools/call',
    async run({ client, tag }) {
      const result = await client.callTool('echo', { message: `matrix ${tag}` });
      assert.notEqual(result.isError, true, `echo failed: ${textOf(result)}`);
      assert.equal(textOf(result), `Echo: matrix ${tag}`);
    },
  },
  {
    label: 'progress',
    async run({ client }) {
      const events: ProgressEvent[] = [];
      const result = await client.callTool('trigger-long-running-operation', { duration: 0.6, steps: 3 }, { onprogress: (p) => events.push(p) });
      const beforeResult = events.slice(); // everything the client had received when the result arrived
      assert.notEqual(result.isError, true, `long-running operation failed: ${textOf(result)}`);
      assert.match(textOf(result), /Long running operation completed\. Duration: 0\.6 seconds, Steps: 3\./);
      assert.ok(beforeResult.length >= 2, `expected ≥ 2 progress notifications before the result, got ${JSON.stringify(beforeResult)}`);
      for (let i = 1; i < beforeResult.length; i++) {
        assert.ok(beforeResult[i]!.progress > beforeResult[i - 1]!.progress, `progress not increasing: ${JSON.stringify(beforeResult)}`);
      }
    },
  },
  {
    label: 'prompts/get',
    async run({ client }) {
      assert.deepEqual(await client.getPromptTexts('simple-prompt'), ['This is a simple prompt without arguments.']);
    },
  },
  {
    label: 'resources/read',
    async run({ client }) {
      const texts = await client.readResourceTexts('demo://resource/dynamic/text/7');
      assert.equal(texts.length, 1, JSON.stringify(texts));
      assert.match(texts[0]!, /^Resource 7: This is a plaintext resource created at /);
    },
  },
  {
    label: 'elicitation',
    elicitAnswer: (tag) => ({ action: 'accept', content: { name: `Ada ${tag}`, check: true } }),
    async run({ client, tag }) {
      const result = await client.callTool('trigger-elicitation-request', {});
      assert.equal(client.elicitations.length, 1, `the elicitation handler ran ${client.elicitations.length} times`);
      assert.equal(client.elicitations[0]!.message, ELICIT_MESSAGE);
      const text = textOf(result);
      assert.notEqual(result.isError, true, `elicitation tool failed: ${text}`);
      assert.match(text, /User provided the requested information/);
      assert.ok(text.includes(`- Name: Ada ${tag}`), `the answer is not in the result: ${text}`);
      assert.match(text, /- Agreed to terms: true/);
    },
  },
];

/**
 * Runs one cell. `url` is the endpoint the client connects to; given as a function, it is read inside the
 * cell, so an upstream that did not start fails the cell with the same diagnostics as a failed connect.
 */
export type CellRunner = (kind: AnyClientKind, url: string | (() => string), upstream: MatrixUpstream, op: OperationSpec) => Promise<void>;

/**
 * A cell runner whose cells are tagged `<tagPrefix>-1`, `<tagPrefix>-2`, … and whose connects and requests
 * are bounded by `requestTimeoutMs`.
 */
export function createCellRunner(opts: { tagPrefix: string; requestTimeoutMs: number }): CellRunner {
  let cellCounter = 0;
  return async (kind, url, upstream, op) => {
    const tag = `${opts.tagPrefix}-${++cellCounter}`;
    const answer = op.elicitAnswer?.(tag);
    const wire: WireRecord[] = [];
    let client: MatrixClient | undefined;
    try {
      client = await connectClient(kind, typeof url === 'function' ? url() : url, {
        timeoutMs: opts.requestTimeoutMs,
        wire,
        ...(answer ? { elicitAnswer: answer } : {}),
      });
      await op.run({ client, upstream, tag });
    } catch (err) {
      // Keep the client's own error first; add what went over the wire for whoever debugs the gateway.
      const where = `${client ? `era=${client.era() ?? '?'}` : 'connect failed'}; wire: ${describeWire(wire)}`;
      if (err instanceof assert.AssertionError) {
        err.message = `${err.message}\n  ${where}`;
        throw err;
      }
      throw new Error(`${describeError(err)}\n  ${where}`, { cause: err });
    } finally {
      await client?.close();
    }
  };
}
