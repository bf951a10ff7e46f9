// Whether a host name or address is the local machine: anonymous access, plain-http key sets and the
// Host guard's defaults all depend on it, so it is decided in one place.

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}
