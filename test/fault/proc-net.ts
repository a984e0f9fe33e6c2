// Which process opened a loopback TCP connection? Linux only, read from /proc.
//
// The fault proxy sees a connection from 127.0.0.1:<ephemeral port>. The client side of
// that connection is a socket in /proc/net/tcp (local port = the ephemeral port, remote
// port = the proxy's port) with an inode; the process that owns it has a file descriptor
// linked to "socket:[inode]". We look only at the processes we started (and their
// children), so this needs no privileges and knows nothing of the server's protocol.
//
// The reads are synchronous and the socket inodes of our processes are cached. An
// asynchronous walk (one threadpool round trip per descriptor, awaited in turn) took over
// 100 ms for most lookups of a 30-minute five-member run in the harness's busy process, up
// to 36 s; a partition holds a new peer connection until its source is known, so those
// waits delayed messages between members that no partition separated. /proc reads do not
// block on a disk: a lookup is a few milliseconds of CPU at most, usually one read of
// /proc/net/tcp and a cache hit.

import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** The inode of the IPv4 socket whose local port is `localPort` and remote port `remotePort`. */
export function findSocketInode(procNetTcp: string, localPort: number, remotePort: number): string | undefined {
  // Lines read "sl local_address rem_address st ... inode"; addresses are HEX_IP:HEX_PORT.
  const local = `:${localPort.toString(16).toUpperCase().padStart(4, "0")} `;
  let at = procNetTcp.indexOf(local);
  while (at !== -1) {
    const lineStart = procNetTcp.lastIndexOf("\n", at) + 1;
    const lineEnd = procNetTcp.indexOf("\n", at);
    const f = procNetTcp.slice(lineStart, lineEnd === -1 ? undefined : lineEnd).trim().split(/\s+/);
    if (parseInt(f[1]?.split(":")[1] ?? "", 16) === localPort && parseInt(f[2]?.split(":")[1] ?? "", 16) === remotePort) return f[9];
    at = procNetTcp.indexOf(local, at + local.length);
  }
  return undefined;
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      let text = "";
      try {
        text = readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8");
      } catch {
        // the thread is gone
      }
      for (const c of text.trim().split(/\s+/)) if (c !== "") out.push(Number(c));
    }
  } catch {
    // the process is gone
  }
  return out;
}

/** Adds `pid`'s socket inodes to `into` as owned by `owner`. */
function scanSockets<T>(pid: number, owner: T, into: Map<string, T>): void {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return;
  }
  for (const fd of fds) {
    let link: string;
    try {
      link = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    if (link.startsWith("socket:[")) into.set(link.slice(8, -1), owner);
  }
}

/** Socket inode → owner, for the processes of one owners map; rebuilt when an inode is missing. */
let cache: { owners: ReadonlyMap<number, unknown>; byInode: Map<string, unknown> } | undefined;

/**
 * The key of `owners` (pid → owner) whose process (or a child of it) holds the client end
 * of the connection 127.0.0.1:localPort → 127.0.0.1:remotePort; undefined if none does.
 * `procNetTcp`: a read of /proc/net/tcp taken after the connection was accepted, to answer
 * several lookups with one read (it lists every socket of the machine, and can be slow).
 */
export function socketOwnerSync<T>(localPort: number, remotePort: number, owners: ReadonlyMap<number, T>, procNetTcp?: string): T | undefined {
  let tcp = procNetTcp ?? "";
  try {
    tcp = procNetTcp ?? readFileSync("/proc/net/tcp", "utf8");
  } catch {
    return undefined;
  }
  const inode = findSocketInode(tcp, localPort, remotePort);
  if (inode === undefined || inode === "0") return undefined;
  if (cache !== undefined && sameOwners(cache.owners, owners) && cache.byInode.has(inode)) return cache.byInode.get(inode) as T;
  const byInode = new Map<string, T>();
  for (const [pid, owner] of owners) {
    scanSockets(pid, owner, byInode);
    for (const child of childrenOf(pid)) scanSockets(child, owner, byInode);
  }
  cache = { owners: new Map(owners), byInode };
  return byInode.get(inode);
}

/** socketOwnerSync as the proxy's asynchronous lookup. */
export function socketOwner<T>(localPort: number, remotePort: number, owners: ReadonlyMap<number, T>): Promise<T | undefined> {
  return Promise.resolve(socketOwnerSync(localPort, remotePort, owners));
}

function sameOwners(a: ReadonlyMap<number, unknown>, b: ReadonlyMap<number, unknown>): boolean {
  if (a.size !== b.size) return false;
  for (const [pid, owner] of b) if (a.get(pid) !== owner) return false;
  return true;
}
