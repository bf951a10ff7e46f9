// Whether a response's client ended it early (the `end` event's outcome `aborted`) or it ended as it was
// meant to. A stream opened only to listen (an HTTP+SSE connection's stream, a GET stream, a
// subscriptions/listen stream) has no end of its own: "The client MAY close the SSE stream at any time"
// (2025-11-25/basic/transports.mdx §Listening for Messages from the Server; 2026-07-28/basic/patterns/
// subscriptions.mdx §Cancellation: the client closes the stream to end the subscription). Once served (its
// headers sent), its client closing it is its normal end, not an abort. Before that, the client left a
// request Gatehouse had not yet served, as for any other call.

/** `listening`: the response is a stream opened only to listen. */
export function clientAborted(res: { readonly writableFinished: boolean; readonly headersSent: boolean }, listening: boolean): boolean {
  if (res.writableFinished) return false;
  return !listening || !res.headersSent;
}
