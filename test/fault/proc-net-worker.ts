// The proxy process's source lookups (proc-net.ts) on a worker thread. A lookup reads
// /proc/net/tcp, which lists every TCP socket of the machine: with 12,000 sockets in
// TIME_WAIT from other jobs one read took 24-557 ms at load 15-20, synchronously, and on
// the proxies' thread every byte between members waited behind it. Here it waits only
// for the connection whose source is asked. Requests that arrive during a read share the
// next one.

import { readFileSync } from "node:fs";
import { parentPort } from "node:worker_threads";
import { socketOwnerSync } from "./proc-net.ts";

export interface LookupRequest {
  id: number;
  localPort: number;
  remotePort: number;
  owners: Array<[number, number]>;
}

export interface LookupReply {
  id: number;
  owner: number | undefined;
}

// Id 0: loaded and listening (the proxy process waits for it before it takes requests).
parentPort?.postMessage({ id: 0, owner: undefined } satisfies LookupReply);

// The requests that queued while a read ran are answered from one read: at 11 new peer
// connections a second (5 members under faults) one read each fell behind by 44 s.
let queue: LookupRequest[] = [];
parentPort?.on("message", (m: LookupRequest) => {
  if (queue.push(m) === 1) setImmediate(answer);
});

function answer(): void {
  const batch = queue;
  queue = [];
  let tcp: string | undefined;
  try {
    tcp = readFileSync("/proc/net/tcp", "utf8");
  } catch {
    tcp = undefined;
  }
  for (const m of batch) {
    const reply: LookupReply = { id: m.id, owner: tcp === undefined ? undefined : socketOwnerSync(m.localPort, m.remotePort, new Map(m.owners), tcp) };
    parentPort?.postMessage(reply);
  }
}
