// A bounded LRU cache whose memory follows its use.
//
// lru-cache given `max` allocates its lists for `max` entries up front: at 100,000 entries that is two
// arrays of 781 KB and three typed arrays of 391 KB, 2.7 MB per cache, filled before the first entry. The
// store's row cache and the failed-auth limiter's two lists held 8 MB of the idle process that way (issue 17
// item 3: a heap snapshot of the pass-through, which uses none of them). Bounded by `maxSize` with every
// entry counted as 1 instead, lru-cache grows its lists as entries arrive and still forgets the least
// recently used past the bound. Reads are the same; a write calls the size function once.

import { LRUCache } from 'lru-cache';

/** Options of the cache, but for the bound, which `growingLru` sets. */
export type GrowingLruOptions<K extends {}, V extends {}> = Omit<LRUCache.Options<K, V, unknown>, 'max' | 'maxSize' | 'maxEntrySize' | 'sizeCalculation'>;

const ONE = (): number => 1;

/** An LRU cache of at most `maxEntries` entries, allocating only for those it holds. */
export function growingLru<K extends {}, V extends {}>(maxEntries: number, options: GrowingLruOptions<K, V> = {}): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: maxEntries, sizeCalculation: ONE } as LRUCache.Options<K, V, unknown>);
}
