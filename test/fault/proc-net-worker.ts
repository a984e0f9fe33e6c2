// The proxy process's source lookups (proc-net.ts) on a worker thread. A lookup reads
// /proc/net/tcp, which lists every TCP socket of the machine: with 12,000 sockets in
// TIME_WAIT from other jobs one read took 24-557 ms at load 15-20, synchronously, and on
// the proxies' thread every byte between members waited behind it. Here it waits only
// for the connection whose source is asked.

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
parentPort?.on("message", (m: LookupRequest) => {
  const reply: LookupReply = { id: m.id, owner: socketOwnerSync(m.localPort, m.remotePort, new Map(m.owners)) };
  parentPort?.postMessage(reply);
});
