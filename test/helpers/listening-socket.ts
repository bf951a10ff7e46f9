// Whether a child process itself holds a listening TCP socket on a port, read from /proc (Linux, as every
// machine these tests run on). A test fixture picks a free port, releases it and hands it to a child; another
// test may take it in between, and then "something answers on the port" proves nothing about the child.

import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

const LISTEN = '0A';

/** Inodes of the sockets listening on `port` (any loopback or wildcard address, IPv4 or IPv6). */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      if (cols.length < 10 || cols[3] !== LISTEN) continue;
      if (cols[1]!.endsWith(`:${hexPort}`)) inodes.add(cols[9]!);
    }
  }
  return inodes;
}

/** True when process `pid` has an open file descriptor on a socket listening on `port`. */
export function holdsListeningPort(pid: number, port: number): boolean {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return false;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m && inodes.has(m[1]!)) return true;
  }
  return false;
}
