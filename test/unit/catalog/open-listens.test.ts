// The modern listens held across reloads (catalog/open-listens.ts): after a reload's rejudge they move to
// the catalog served by the latest reload, never back to an earlier one whose rejudge ended later, and a
// listen opened on a retired catalog after that is taken to the served one at once.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenListens, type OpenListen } from '../../../src/catalog/open-listens.js';
import type { Catalog } from '../../../src/catalog/catalog.js';
import type { Principal } from '../../../src/pipeline/principal.js';

const catalog = (name: string): Catalog => ({ name }) as unknown as Catalog;

/** A listen that records where it is, as MovingListen.moveTo does. */
function listenOn(on: Catalog): OpenListen & { on: Catalog } {
  return {
    principal: { subject: 'anonymous' } as unknown as Principal,
    capabilities: {},
    receivedAt: 0,
    uris: [],
    on,
    end() {},
    moveTo(to: Catalog) {
      if (to === this.on) return false;
      this.on = to;
      return true;
    },
  };
}

test('listens move to the catalog of the latest reload, whichever rejudge ends last', () => {
  const listens = new OpenListens();
  const first = catalog('first');
  const second = catalog('second');
  const third = catalog('third');
  const open = listenOn(first);
  listens.add(open);
  // Two reloads in a row: each serves its catalog at once, and moves when its own rejudge has ended.
  listens.serve(second);
  listens.serve(third);
  assert.equal(listens.moveAll(), 1, 'the later reload\'s rejudge ends first');
  assert.equal(open.on, third);
  assert.equal(listens.moveAll(), 0, 'the earlier reload\'s rejudge ends later and moves nothing back');
  assert.equal(open.on, third);
  const late = listenOn(second);
  listens.add(late);
  assert.equal(late.on, third, 'a listen opened on a retired catalog goes to the served one at once');
});
