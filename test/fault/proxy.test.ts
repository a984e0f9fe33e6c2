// The fault proxy against a local echo server, with this test process playing member 0
// and the echo server behind member 1's proxy; in this process, and in the proxy process
// the harness runs them in (proxy-process.ts).

import assert from "node:assert/strict";
import { after, test } from "node:test";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createConnection, createServer, type AddressInfo, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { findSocketInode, socketOwnerSync } from "./proc-net.ts";
import { FaultProxy, Network } from "./proxy.ts";
import { ProxyProcess } from "./proxy-process.ts";

const echo = createServer((s) => {
  s.on("error", () => {});
  s.pipe(s);
});
await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
const echoPort = (echo.address() as { port: number }).port;
after(() => echo.close());

async function startProxy(network: Network, owners: Map<number, number>): Promise<FaultProxy> {
  const proxy = new FaultProxy({ member: 1, listenPort: 0, targetPort: echoPort, network, owners: () => owners });
  await proxy.start();
  after(() => proxy.close());
  return proxy;
}

function connect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createConnection({ host: "127.0.0.1", port }, () => resolve(s));
    s.once("error", reject);
  });
}

/** Resolves with the first data within `ms`, or undefined if none came (a bounded wait for an absence). */
function firstData(s: Socket, ms: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(undefined), ms);
    s.once("data", (d: Buffer) => {
      clearTimeout(t);
      resolve(d.toString());
    });
  });
}

function closed(s: Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (s.destroyed) return resolve(true);
    const t = setTimeout(() => resolve(false), ms);
    s.once("close", () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

test("proxy forwards a connection from a member that is not partitioned away", async () => {
  const proxy = await startProxy(new Network(3), new Map([[process.pid, 0]]));
  const s = await connect(proxy.port);
  s.write("ping");
  assert.equal(await firstData(s, 5000), "ping");
  s.destroy();
});

test("proxy cuts open connections and black-holes new ones when the source is isolated, until heal", async () => {
  const network = new Network(3);
  const proxy = await startProxy(network, new Map([[process.pid, 0]]));
  const open = await connect(proxy.port);
  open.write("a");
  assert.equal(await firstData(open, 5000), "a");

  network.isolate(0);
  assert.equal(await closed(open, 5000), true, "the open connection is cut");
  const held = await connect(proxy.port);
  held.on("error", () => {});
  held.write("b");
  assert.equal(await firstData(held, 300), undefined, "nothing crosses the partition");
  assert.equal(proxy.stats.held, 1);

  network.heal();
  assert.equal(await closed(held, 5000), true, "held connections are dropped on heal so members redial");
  const again = await connect(proxy.port);
  again.write("c");
  assert.equal(await firstData(again, 5000), "c");
  again.destroy();
});

test("proxy blocks by pair: a partition between other members does not touch this one", async () => {
  const network = new Network(3);
  const proxy = await startProxy(network, new Map([[process.pid, 0]]));
  network.split([0, 1], [2]);
  const s = await connect(proxy.port);
  s.write("x");
  assert.equal(await firstData(s, 5000), "x");
  s.destroy();
  network.split([0], [1, 2]);
  const t = await connect(proxy.port);
  t.on("error", () => {});
  t.write("y");
  assert.equal(await firstData(t, 300), undefined);
  t.destroy();
});

test("proxy forwards an unknown source without a partition, cuts and holds it during one", async () => {
  const network = new Network(3);
  const proxy = await startProxy(network, new Map());
  const s = await connect(proxy.port);
  s.write("u");
  assert.equal(await firstData(s, 5000), "u");
  s.destroy();
  const open = await connect(proxy.port);
  open.write("w");
  assert.equal(await firstData(open, 5000), "w");
  network.split([1], [2]);
  assert.equal(await closed(open, 5000), true, "an unknown source is cut when a partition starts");
  const t = await connect(proxy.port);
  t.on("error", () => {});
  t.write("v");
  assert.equal(await firstData(t, 300), undefined);
  assert.ok(proxy.stats.unknownSource >= 2);
  t.destroy();
});

/** A source lookup that answers only when the test says so (the /proc scan of a loaded machine). */
function slowLookup(): { lookup: () => Promise<number | undefined>; answer: (from: number | undefined) => void } {
  const waiting: Array<(from: number | undefined) => void> = [];
  return {
    lookup: () => new Promise<number | undefined>((resolve) => waiting.push(resolve)),
    answer: (from) => {
      for (const resolve of waiting.splice(0)) resolve(from);
    },
  };
}

/** Member 1's proxy in front of the echo server, with no owners and a lookup the test answers. */
async function startSlowProxy(): Promise<{ network: Network; slow: ReturnType<typeof slowLookup>; proxy: FaultProxy }> {
  const network = new Network(3);
  const slow = slowLookup();
  const proxy = new FaultProxy({ member: 1, listenPort: 0, targetPort: echoPort, network, owners: () => new Map(), lookup: slow.lookup });
  await proxy.start();
  after(() => proxy.close());
  return { network, slow, proxy };
}

test("proxy forwards without a lookup while no partition is in force, and looks up when one starts", async () => {
  const { network, slow, proxy } = await startSlowProxy();
  const s = await connect(proxy.port);
  s.write("now");
  assert.equal(await firstData(s, 5000), "now", "data crosses with no lookup");
  assert.equal(proxy.stats.lookups, 0, "no partition, no lookup");
  // A partition that does not block member 0: looked up, kept.
  network.split([0, 1], [2]);
  assert.equal(proxy.stats.lookups, 1, "a partition looks the open link up");
  slow.answer(0);
  s.write("kept");
  assert.equal(await firstData(s, 5000), "kept", "a link the partition does not block keeps forwarding");
  network.heal();
  // One that does: judged from the lookup already made, cut at once.
  network.isolate(0);
  assert.equal(proxy.stats.lookups, 1, "a link is looked up once");
  assert.equal(await closed(s, 5000), true, "a link whose source the partition blocks is cut");
  const t = await connect(proxy.port);
  t.on("error", () => {});
  t.write("held");
  assert.equal(await firstData(t, 300), undefined, "during a partition the proxy waits for the source");
  slow.answer(0);
  assert.equal(await firstData(t, 300), undefined, "and holds a blocked one");
  assert.equal(proxy.stats.held, 1);
  t.destroy();
});

test("proxy judges a link forwarded before a partition only once its source is known", async () => {
  const { network, slow, proxy } = await startSlowProxy();
  const s = await connect(proxy.port);
  s.write("a");
  assert.equal(await firstData(s, 5000), "a");
  network.isolate(0);
  s.write("b");
  assert.equal(await firstData(s, 5000), "b", "forwarding goes on while the lookup runs");
  slow.answer(0);
  assert.equal(await closed(s, 5000), true, "and stops when it finds a blocked source");
  assert.equal(proxy.stats.cut, 1);
});

test("proxy resets a connection whose member is down, and counts it refused", async () => {
  const gone = createServer();
  await new Promise<void>((r) => gone.listen(0, "127.0.0.1", () => r()));
  const downPort = (gone.address() as AddressInfo).port;
  await new Promise<void>((r) => gone.close(() => r()));
  const proxy = new FaultProxy({ member: 1, listenPort: 0, targetPort: downPort, network: new Network(3), owners: () => new Map() });
  await proxy.start();
  after(() => proxy.close());
  const s = await connect(proxy.port);
  const error = new Promise<string | undefined>((resolve) => {
    s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code));
    s.once("close", () => resolve(undefined));
  });
  assert.equal(await error, "ECONNRESET", "the dialler sees a reset, not an orderly close");
  assert.equal(proxy.stats.refused, 1);
  assert.equal(proxy.stats.forwarded, 0);
  assert.equal(proxy.stats.lookups, 0);
});

test("proxy stops listening while its member is down, so dials are refused, and listens again on the same port", async () => {
  const proxy = await startProxy(new Network(3), new Map());
  const port = proxy.port;
  await proxy.setTargetUp(false);
  await assert.rejects(connect(port), (e: NodeJS.ErrnoException) => e.code === "ECONNREFUSED");
  assert.equal(proxy.stats.refused, 0, "refused by the kernel, not by the proxy");
  // Down then up before the first finished: the calls run in order.
  void proxy.setTargetUp(false);
  await proxy.setTargetUp(true);
  assert.equal(proxy.port, port);
  const s = await connect(port);
  s.write("back");
  assert.equal(await firstData(s, 5000), "back");
  s.destroy();
});

test("a proxy that cannot listen again says so, and listens once the port is free and it is asked again", async () => {
  const proxy = await startProxy(new Network(3), new Map());
  const port = proxy.port;
  await proxy.setTargetUp(false);
  const squatter = createServer((s) => s.end("squatter"));
  await new Promise<void>((r) => squatter.listen(port, "127.0.0.1", () => r()));
  const said: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string) => said.push(String(chunk)) > 0) as typeof process.stderr.write;
  try {
    await proxy.setTargetUp(true);
  } finally {
    process.stderr.write = write;
  }
  assert.match(said.join(""), /member 1: cannot listen again on port \d+: .*EADDRINUSE/);
  await new Promise<void>((r) => squatter.close(() => r()));
  await proxy.setTargetUp(false);
  await proxy.setTargetUp(true);
  const s = await connect(port);
  s.write("mine");
  assert.equal(await firstData(s, 5000), "mine", "the proxy, not the squatter, answers");
  s.destroy();
});

test("network isolate blocks exactly the pairs with the isolated member", () => {
  const n = new Network(4);
  n.isolate(2);
  const blocked = [];
  for (let a = 0; a < 4; a++) for (let b = a + 1; b < 4; b++) if (n.isBlocked(a, b)) blocked.push(`${a}-${b}`);
  assert.deepEqual(blocked, ["0-2", "1-2", "2-3"]);
  assert.equal(n.isBlocked(2, 0), true, "pairs are unordered");
  n.heal();
  assert.equal(n.partitioned, false);
});

test("findSocketInode picks the socket by local and remote port from /proc/net/tcp text", () => {
  const text = [
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
    "   0: 0100007F:900B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 215475 1 0",
    "   1: 0100007F:D431 0100007F:5C4C 01 00000000:00000000 00:00000000 00000000  1000        0 777001 1 0",
  ].join("\n");
  assert.equal(findSocketInode(text, 0xd431, 0x5c4c), "777001");
  assert.equal(findSocketInode(text, 0xd431, 1), undefined);
});

test("socketOwnerSync finds the process that dialled a loopback connection, and no other", async () => {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  const accepted = new Promise<Socket>((r) => server.once("connection", r));
  const client = await connect(port);
  const inbound = await accepted;
  try {
    const dialPort = inbound.remotePort!;
    assert.equal(socketOwnerSync(dialPort, port, new Map([[process.pid, "me"]])), "me");
    // Asked again (the cached scan answers), and for owners that do not include this process
    // (the parent counts: it owns its children's sockets; a pid nobody has owns nothing).
    assert.equal(socketOwnerSync(dialPort, port, new Map([[process.pid, "me"]])), "me");
    assert.equal(socketOwnerSync(dialPort, port, new Map([[process.ppid, "parent"]])), "parent");
    assert.equal(socketOwnerSync(dialPort, port, new Map([[0x7ffffff0, "nobody"]])), undefined);
    assert.equal(socketOwnerSync(dialPort, port + 1 === 65536 ? 1 : port + 1, new Map([[process.pid, "me"]])), undefined);
  } finally {
    client.destroy();
    inbound.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test("the proxy process forwards, cuts, holds and releases as the harness's partition table says", async () => {
  const unexpected: string[] = [];
  const proxies = await ProxyProcess.start((why) => unexpected.push(why));
  after(() => proxies.close());
  const network = new Network(3);
  network.onChange(() => proxies.setBlocked(3, network.pairs()));
  const port = await proxies.open(3, 1, 0, echoPort);
  // Member 1 (the echo server's side) must count as running, or its proxy stops listening:
  // a pid with no sockets stands for it (`sleep`, a child of this test).
  const member1 = spawn("sleep", ["60"], { stdio: "ignore" });
  after(() => member1.kill("SIGKILL"));
  proxies.setOwners(new Map([[process.pid, 0], [member1.pid!, 1]]));

  const open = await connect(port);
  open.write("a");
  assert.equal(await firstData(open, 5000), "a");
  // During a partition the proxy waits for the source: this one (member 0, on member 1's
  // side) is forwarded only if the child's lookup found this process.
  network.split([0, 1], [2]);
  const fresh = await connect(port);
  fresh.write("f");
  assert.equal(await firstData(fresh, 5000), "f", "a source the partition does not block is found and forwarded");
  network.heal();
  network.split([0, 2], [1]);
  assert.equal(await closed(fresh, 5000), true, "an open connection the partition blocks is cut");
  const held = await connect(port);
  held.on("error", () => {});
  held.write("b");
  assert.equal(await firstData(held, 300), undefined, "nothing crosses the partition");
  network.heal();
  assert.equal(await closed(held, 5000), true, "held connections are dropped on heal");
  const again = await connect(port);
  again.write("c");
  assert.equal(await firstData(again, 5000), "c");
  again.destroy();
  open.destroy();

  const [stats] = await proxies.stats();
  assert.ok(stats !== undefined);
  assert.equal(stats.held, 1);
  assert.ok(stats.cut >= 1);
  assert.equal(stats.forwarded, 3);
  assert.ok((await proxies.loopDelay(true)) !== undefined);
  await proxies.close();
  assert.deepEqual(unexpected, [], "close() is not reported as an unexpected exit");
  await assert.rejects(proxies.stats(), /gone/);
});

/** Whether `pid` runs (a zombie nobody reaped yet counts as dead). */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}

test("the proxy process dies with a harness that is SIGKILLed", { timeout: 60_000 }, async () => {
  const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
  const code = "const { ProxyProcess } = await import(process.argv[1]); const p = await ProxyProcess.start(() => {}); console.log(p.pid); setInterval(() => {}, 1000);";
  const harness = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code, fileURLToPath(new URL("./proxy-process.ts", import.meta.url))], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "inherit"],
  });
  after(() => harness.kill("SIGKILL"));
  const childPid = await new Promise<number>((resolve, reject) => {
    let out = "";
    harness.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("\n")) resolve(Number(out.trim()));
    });
    harness.once("exit", (c) => reject(new Error(`the harness exited first: ${c}`)));
  });
  assert.ok(childPid > 0 && alive(childPid), "the proxy process runs");
  const exited = new Promise<void>((resolve) => harness.once("exit", () => resolve()));
  harness.kill("SIGKILL");
  await exited;
  // Its exit is not ours to hear (it is the dead harness's child): poll, bounded.
  for (let i = 0; i < 200 && alive(childPid); i++) await new Promise((r) => setTimeout(r, 50));
  if (alive(childPid)) process.kill(childPid, "SIGKILL");
  assert.equal(alive(childPid), false, "no proxy process outlives its harness");
});
