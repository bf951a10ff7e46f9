// log.format (issue 15 item 4): JSON lines where a program reads them (Kubernetes, files), readable lines
// on a terminal, chosen by `auto` from whether stderr is a TTY. Pretty lines are made after scrubbing, so a
// secret is as hidden in them as in JSON.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, resolveLogFormat } from '../../../src/log/logger.js';

describe('log.format', () => {
  it('auto is pretty on a terminal and JSON elsewhere; json and pretty are what they say', () => {
    assert.equal(resolveLogFormat('auto', { isTTY: true }), 'pretty');
    assert.equal(resolveLogFormat('auto', { isTTY: false }), 'json');
    assert.equal(resolveLogFormat('auto', {}), 'json');
    assert.equal(resolveLogFormat('json', { isTTY: true }), 'json');
    assert.equal(resolveLogFormat('pretty', { isTTY: false }), 'pretty');
  });

  it('pretty lines are readable: time, level, message, then the fields, objects as objects; secrets stay scrubbed', () => {
    const lines: string[] = [];
    const previous = process.env.NO_COLOR;
    process.env.NO_COLOR = '1';
    try {
      const log = createLogger('info', (line) => lines.push(line), {}, { format: 'pretty', secrets: ['s3cret-value-123'] });
      log.info('upstream session opened', { capabilities: { sampling: {}, elicitation: { form: {} } }, header: 'Bearer s3cret-value-123' });
    } finally {
      if (previous === undefined) delete process.env.NO_COLOR;
      else process.env.NO_COLOR = previous;
    }
    const text = lines.join('');
    assert.match(text, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: upstream session opened\n/);
    assert.match(text, /capabilities: \{\n\s+"sampling": \{\},/);
    assert.doesNotMatch(text, /s3cret-value-123/);
    assert.throws(() => JSON.parse(lines[0]!), 'not JSON');
  });

  it('json lines stay one JSON object per line', () => {
    const lines: string[] = [];
    createLogger('info', (line) => lines.push(line), {}, { format: 'json' }).info('hello', { n: 1 });
    const parsed = JSON.parse(lines[0]!) as { msg: string; n: number; level: string };
    assert.equal(parsed.msg, 'hello');
    assert.equal(parsed.level, 'info');
  });
});
