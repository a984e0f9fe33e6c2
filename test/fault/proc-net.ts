// Which process opened a loopback TCP connection? Linux only, read from /proc.
//
// The fault proxy sees a connection from 127.0.0.1:<ephemeral port>. The client side of
// that connection is a socket in /proc/net/tcp (local port = the ephemeral port, remote
// port = the proxy's port) with an inode; the process that owns it has a file descriptor
// linked to "socket:[inode]". We look only at the processes we started (and their
// children), so this needs no privileges and knows nothing of the server's protocol.

import { readdir, readFile, readlink } from "node:fs/promises";

/** The inode of the IPv4 socket whose local port is `localPort` and remote port `remotePort`. */
export function findSocketInode(procNetTcp: string, localPort: number, remotePort: number): string | undefined {
  for (const line of procNetTcp.split("\n").slice(1)) {
    const f = line.trim().split(/\s+/);
    const local = f[1];
    const remote = f[2];
    if (local === undefined || remote === undefined) continue;
    if (parseInt(local.split(":")[1] ?? "", 16) !== localPort) continue;
    if (parseInt(remote.split(":")[1] ?? "", 16) !== remotePort) continue;
    return f[9];
  }
  return undefined;
}

async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  try {
    for (const tid of await readdir(`/proc/${pid}/task`)) {
      const text = await readFile(`/proc/${pid}/task/${tid}/children`, "utf8").catch(() => "");
      for (const c of text.trim().split(/\s+/)) if (c !== "") out.push(Number(c));
    }
  } catch {
    // the process is gone
  }
  return out;
}

async function ownsInode(pid: number, inode: string): Promise<boolean> {
  const want = `socket:[${inode}]`;
  let fds: string[];
  try {
    fds = await readdir(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    const link = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
    if (link === want) return true;
  }
  return false;
}

/**
 * The key of `owners` (pid → owner) whose process (or a child of it) holds the client end
 * of the connection 127.0.0.1:localPort → 127.0.0.1:remotePort; undefined if none does.
 */
export async function socketOwner<T>(localPort: number, remotePort: number, owners: ReadonlyMap<number, T>): Promise<T | undefined> {
  const tcp = await readFile("/proc/net/tcp", "utf8").catch(() => "");
  const inode = findSocketInode(tcp, localPort, remotePort);
  if (inode === undefined || inode === "0") return undefined;
  for (const [pid, owner] of owners) {
    if (await ownsInode(pid, inode)) return owner;
    for (const child of await childrenOf(pid)) if (await ownsInode(child, inode)) return owner;
  }
  return undefined;
}
