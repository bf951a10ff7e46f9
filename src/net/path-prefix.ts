// A reverse proxy may serve Gatehouse under a path prefix and strip it before forwarding (`https://host/gw/…`
// reaches Gatehouse as `/…`). Gatehouse learns the prefix from `listen.publicUrl` ending in `listen.path`, and
// every URL it hands a client to come back to (the SSE messages endpoint, the challenge's resource_metadata)
// keeps it: without it the URL leads outside the prefix, where the proxy routes nothing to Gatehouse.

/** `/gw` when listen.publicUrl is `https://host/gw/mcp` and listen.path `/mcp`; '' when there is none. */
export function proxyPathPrefix(mcpPath: string, publicUrl: string | undefined): string {
  if (publicUrl === undefined) return '';
  let path: string;
  try {
    path = new URL(publicUrl).pathname;
  } catch {
    return '';
  }
  return path.endsWith(mcpPath) ? path.slice(0, path.length - mcpPath.length).replace(/\/+$/, '') : '';
}
