// Client-controlled values quoted back in messages. `String(x)` throws on an object whose `toString` is
// not a function (`{"toString": 1}` is valid JSON), so anything that is not a primitive is shown as JSON.

/** A short, never-throwing rendering of any parsed JSON value, for error messages and logs. */
export function describeValue(value: unknown, max = 100): string {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (value === undefined) text = 'undefined';
  else if (value === null || typeof value === 'number' || typeof value === 'boolean') text = `${value}`;
  else {
    try {
      text = JSON.stringify(value) ?? typeof value;
    } catch {
      text = typeof value;
    }
  }
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
