// The proxy process's entry (forked by proxy-process.ts): the fault proxies of one run,
// their partition table and the source lookups, alone on an event loop, so a busy harness
// does not delay the bytes between members. Answers the harness's requests over IPC and
// exits with it.

import { monitorEventLoopDelay } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { socketOwner } from "./proc-net.ts";
import type { LookupReply, LookupRequest } from "./proc-net-worker.ts";
import { FaultProxy, Network } from "./proxy.ts";
import type { LoopDelay, ProxyReply, ProxyRequest } from "./proxy-process.ts";

const send = process.send?.bind(process);
if (send === undefined) {
  process.stderr.write("proxy-child.ts runs only as a child with an IPC channel (proxy-process.ts forks it)\n");
  process.exit(2);
}

let owners: ReadonlyMap<number, number> = new Map();
let network: Network | undefined;
const proxies: FaultProxy[] = [];
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

let exitAfterReply = false;

// Source lookups run on a worker thread (proc-net-worker.ts says why); on this thread
// only if the worker fails.
// A worker thread does not run this process's --import hooks: its bootstrap registers
// tsx itself before it loads the TypeScript module.
const workerUrl = new URL("./proc-net-worker.ts", import.meta.url).href;
const bootstrap = `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(workerUrl)}); });`;
let lookups: Worker | undefined = new Worker(bootstrap, { eval: true });
const asked = new Map<number, (owner: number | undefined) => void>();
let nextLookup = 1;
lookups.unref();
lookups.on("message", (r: LookupReply) => {
  asked.get(r.id)?.(r.owner);
  asked.delete(r.id);
});
lookups.on("error", (err) => {
  process.stderr.write(`proxy process: source lookups move to the main thread: ${err.message}\n`);
  lookups = undefined;
  for (const resolve of asked.values()) resolve(undefined);
  asked.clear();
});

function lookup(remotePort: number, localPort: number, owners: ReadonlyMap<number, number>): Promise<number | undefined> {
  if (lookups === undefined) return socketOwner(remotePort, localPort, owners);
  const worker = lookups;
  return new Promise((resolve) => {
    const id = nextLookup++;
    asked.set(id, resolve);
    const request: LookupRequest = { id, localPort: remotePort, remotePort: localPort, owners: [...owners] };
    worker.postMessage(request);
  });
}

// Proxies subscribe to the partition table when they are created, so it is made once (by
// the first message that needs it) and then replaced in place.
function table(size: number): Network {
  network ??= new Network(size);
  return network;
}

function reply(r: ProxyReply): void {
  const exit = exitAfterReply;
  try {
    send!(r, undefined, undefined, () => {
      if (exit) process.exit(0);
    });
  } catch {
    // the harness is gone: the disconnect handler exits
    if (exit) process.exit(0);
  }
}

// The histogram holds whole timer intervals (10 ms when idle): the delay is what exceeds one.
const ms = (ns: number): number => Math.max(0, Math.round((ns - 10e6) / 1e5) / 10);

async function handle(m: ProxyRequest): Promise<ProxyReply> {
  switch (m.op) {
    case "open": {
      const proxy = new FaultProxy({ member: m.member, listenPort: m.listenPort, targetPort: m.targetPort, network: table(m.members), owners: () => owners, lookup });
      await proxy.start();
      proxies.push(proxy);
      return { id: m.id, ok: true, port: proxy.port };
    }
    case "owners": {
      owners = new Map(m.owners);
      const running = new Set(owners.values());
      await Promise.all(proxies.map((p) => p.setTargetUp(running.has(p.member))));
      return { id: m.id, ok: true };
    }
    case "blocked":
      table(m.size).replace(m.pairs);
      return { id: m.id, ok: true };
    case "stats":
      return { id: m.id, ok: true, stats: proxies.map((p) => p.stats) };
    case "loop-delay": {
      const delay: LoopDelay = { p50: ms(loop.percentile(50)), p90: ms(loop.percentile(90)), p99: ms(loop.percentile(99)), max: ms(loop.max) };
      if (m.reset) loop.reset();
      return { id: m.id, ok: true, loop: delay };
    }
    case "close":
      await Promise.all(proxies.map((p) => p.close()));
      proxies.length = 0;
      exitAfterReply = true;
      return { id: m.id, ok: true };
  }
}

process.on("message", (m: ProxyRequest) => {
  handle(m).then(reply, (err: unknown) => reply({ id: m.id, ok: false, error: err instanceof Error ? err.message : String(err) }));
});
// The harness exited or was killed (the IPC pipe closed): the proxies go with it.
process.on("disconnect", () => process.exit(0));
// Belt and braces for a parent that died without the channel noticing: re-parented.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 500).unref();
// Ready once the lookup worker is (its first lookups would otherwise wait for it to load,
// and the connections they are for may be gone by then); without it after 20 s.
await new Promise<void>((resolve) => {
  const timer = setTimeout(resolve, 20_000);
  asked.set(0, () => {
    clearTimeout(timer);
    resolve();
  });
  lookups?.once("error", () => resolve());
});
reply({ id: 0, ok: true, ready: true });
