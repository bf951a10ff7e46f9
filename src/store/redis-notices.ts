// Answers ioredis takes as no failure but prints with console.warn: a bare "[WARN] …" line among the
// gateway's one-JSON-object-per-line log, at every connection and reconnection. To AUTH: a password given
// to a server (or a default user, or a sentinel) that needs none, and a username given to a server older
// than ACLs; ioredis carries on unauthenticated after them, as it should. To the ready check's INFO, which
// ioredis keeps with Sentinel (to see that the server the sentinels named is the primary): refused by an
// ACL without +info, it skips the check. They are taken here instead, before ioredis sees them, with the
// outcome ioredis gives them, and told once through `tell` in Gatehouse's words (never the password).

import type { Redis } from 'ioredis';

/** What the server's answer meant, for the operator. */
export type RedisNotice = 'password-not-needed' | 'sentinel-password-not-needed' | 'username-not-supported' | 'info-denied';

/**
 * Redis' own words for each case (the texts ioredis 5 matches before it warns, in event_handler.js and
 * Redis.js _readyCheck): Redis before 6 and with requirepass unset; Redis 6 and later, a default user with
 * nopass; Redis 5, AUTH with two arguments; INFO denied by the user's ACL.
 */
function authNotice(message: string): RedisNotice | undefined {
  if (message.includes('no password is set') || message.includes('without any password configured for the default user')) return 'password-not-needed';
  if (message.includes("wrong number of arguments for 'auth' command")) return 'username-not-supported';
  return undefined;
}

type Callback = (err: Error | null, result?: unknown) => void;

/**
 * `client[name]`, called with a callback (as ioredis calls AUTH on each connection, and INFO for its ready
 * check), answers an error `notice` names as `instead`, and `tell` is told. Any other error reaches the
 * callback as before; a call without a callback (every command Gatehouse sends itself) is not changed.
 */
function answerFor(client: Redis, name: 'auth' | 'info', notice: (message: string) => RedisNotice | undefined, instead: unknown, tell: (notice: RedisNotice) => void): void {
  const command = (client[name] as (...args: unknown[]) => Promise<unknown>).bind(client);
  const wrapped = (...args: unknown[]): Promise<unknown> => {
    const callback = typeof args.at(-1) === 'function' ? (args.pop() as Callback) : undefined;
    const answer = command(...args);
    if (callback === undefined) return answer;
    return answer.then(
      (result) => callback(null, result),
      (err: Error) => {
        const found = notice(err.message);
        if (found === undefined) return callback(err);
        tell(found);
        callback(null, instead);
      },
    );
  };
  (client as unknown as Record<string, typeof wrapped>)[name] = wrapped;
}

/**
 * Takes those answers on `client`, on its duplicates (a Cluster asks a node for its slots, at start and on
 * each refresh, on a duplicate of its connection, with the same password) and on its sentinels'
 * connections. Call it before `client` connects (lazyConnect), or before its first connection's AUTH (a
 * socket connects after the current turn).
 */
export function takeNotices(client: Redis, tell: (notice: RedisNotice) => void): void {
  answerFor(client, 'auth', authNotice, 'OK', tell);
  // '' reads as an INFO of no fields, as ioredis' own skip ({}): the ready check passes, the role unchecked.
  answerFor(client, 'info', (message) => (message.includes('NOPERM') ? 'info-denied' : undefined), '', tell);
  const duplicate = client.duplicate.bind(client);
  client.duplicate = (...args: Parameters<Redis['duplicate']>): Redis => {
    const copy = duplicate(...args);
    takeNotices(copy, tell);
    return copy;
  };
  // A Sentinel-watched primary's client asks the sentinels through connections of their own, made by its
  // connector (not public: ioredis 5's SentinelConnector#connectToSentinel, left alone if it is not there).
  const connector = (client as unknown as { connector?: { connectToSentinel?: (...args: unknown[]) => Redis } }).connector;
  const toSentinel = connector?.connectToSentinel;
  if (connector !== undefined && typeof toSentinel === 'function') {
    connector.connectToSentinel = (...args: unknown[]): Redis => {
      const sentinel = toSentinel.apply(connector, args);
      answerFor(sentinel, 'auth', authNotice, 'OK', (notice) => tell(notice === 'password-not-needed' ? 'sentinel-password-not-needed' : notice));
      return sentinel;
    };
  }
}
