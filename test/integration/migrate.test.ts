// kvctl migrate against a real etcd 3.4 (skipped with a notice when etcd is not installed;
// CI installs it): every kind of v2 node and v3 key copied and compared, --prefix,
// --follow applying etcd's later writes and deletes, and the failures a cut-over can meet
// (an unreachable source; a watch that fell out of etcd's history).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, runKvctl, spawnKvctl, startServer, type TestServer } from "../helpers/server.ts";
import { agent, http, until } from "../helpers/http.ts";
import { ClusterClient } from "../../src/client/cluster.ts";
import { createNodeTransport } from "../../src/client/transport.ts";
import { V3Client } from "../../src/client/v3-gateway.ts";
import { HistoryLostError, LeaseMap, followV2, followV3, type MigrateSide } from "../../src/client/migrate.ts";

const ETCD = "/usr/bin/etcd";
const noEtcd = existsSync(ETCD) ? false : "etcd 3.4 is not installed (apt-get install etcd-server): migrate tests skipped";
if (noEtcd !== false) console.log(`# notice: ${noEtcd}`);

after(() => agent.destroy());

interface Etcd {
  url: string;
  stop(): Promise<void>;
}

const procs = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of procs) p.kill("SIGKILL");
});

async function startEtcd(): Promise<Etcd> {
  const client = await freePort();
  const peer = await freePort();
  const url = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const dir = mkdtempSync(join(tmpdir(), "kvctl-migrate-etcd-"));
  const child = spawn(
    ETCD,
    ["--name", "src", "--data-dir", dir, "--enable-v2=true", "--listen-client-urls", url, "--advertise-client-urls", url,
      "--listen-peer-urls", peerUrl, "--initial-advertise-peer-urls", peerUrl, "--initial-cluster", `src=${peerUrl}`],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  procs.add(child);
  let log = "";
  child.stderr?.on("data", (c: Buffer) => (log = (log + c.toString("utf8")).slice(-5000)));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const done = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await done;
    }
    procs.delete(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(async () => (await fetch(`${url}/health`).then((r) => r.status).catch(() => 0)) === 200, 15_000, `etcd healthy: ${log}`);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, stop };
}

const b64 = (s: string | Buffer): string => (typeof s === "string" ? Buffer.from(s) : s).toString("base64");

async function v3<T = Record<string, unknown>>(url: string, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  assert.equal(res.status, 200, `${url}${path}: ${text}`);
  return JSON.parse(text) as T;
}

async function v2(method: string, url: string, form?: Record<string, string>): Promise<Record<string, unknown>> {
  const r = await http(method, url, form);
  assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${r.body}`);
  return JSON.parse(r.body) as Record<string, unknown>;
}

interface Node {
  key?: string;
  dir?: boolean;
  value?: string;
  ttl?: number;
  nodes?: Node[];
}

/**
 * A v2 tree without indexes and expiration times; a TTL only as present (the two trees are
 * read moments apart, so any rounding of the seconds left can straddle a boundary: 595
 * against 594 once rounded to 600 and 590). The remaining TTLs are checked on their own.
 */
function shape(n: Node): unknown {
  return {
    key: n.key,
    dir: n.dir === true,
    value: n.value,
    ttl: n.ttl !== undefined,
    nodes: n.nodes?.map(shape),
  };
}

async function tree(url: string, path = "/"): Promise<unknown> {
  const r = (await v2("GET", `${url}/v2/keys${path}?recursive=true&sorted=true`)) as { node: Node };
  return shape(r.node);
}

interface Kv {
  key: string;
  value?: string;
  lease?: string | number;
}

async function allV3(url: string): Promise<Kv[]> {
  const zero = b64(Buffer.from([0]));
  const r = await v3<{ kvs?: Kv[] }>(url, "/v3/kv/range", { key: zero, range_end: zero });
  return r.kvs ?? [];
}

/** Fills etcd with every kind of node: dirs, empty dirs, hidden keys and dirs, in-order keys, TTL keys and dirs; v3 keys with and without leases. */
async function fill(etcd: string): Promise<{ inOrder: string[]; leaseId: string }> {
  await v2("PUT", `${etcd}/v2/keys/app/config/db`, { value: "postgres://db:5432" });
  await v2("PUT", `${etcd}/v2/keys/app/config/cache`, { value: "redis://c:6379\nline two" });
  await v2("PUT", `${etcd}/v2/keys/app/empty?dir=true`);
  await v2("PUT", `${etcd}/v2/keys/app/_secret`, { value: "hidden value" });
  await v2("PUT", `${etcd}/v2/keys/_hiddendir/inside`, { value: "in a hidden dir" });
  await v2("PUT", `${etcd}/v2/keys/app/ttl`, { value: "expires", ttl: "600" });
  await v2("PUT", `${etcd}/v2/keys/tmpdir?dir=true`, { ttl: "900" });
  await v2("PUT", `${etcd}/v2/keys/tmpdir/k`, { value: "in a TTL dir" });
  const inOrder: string[] = [];
  for (const job of ["first", "second", "third"]) {
    const r = (await v2("POST", `${etcd}/v2/keys/queue`, { value: job })) as { node: Node };
    inOrder.push(r.node.key ?? "");
  }
  // A key written then deleted must not come back; a hidden key deleted neither.
  await v2("PUT", `${etcd}/v2/keys/app/gone`, { value: "x" });
  await v2("DELETE", `${etcd}/v2/keys/app/gone`);
  await v2("PUT", `${etcd}/v2/keys/app/_gone`, { value: "x" });
  await v2("DELETE", `${etcd}/v2/keys/app/_gone`);

  await v3(etcd, "/v3/kv/put", { key: b64("/app/v3/plain"), value: b64("v3 value") });
  await v3(etcd, "/v3/kv/put", { key: b64("/app/v3/plain"), value: b64("v3 value, second version") });
  await v3(etcd, "/v3/kv/put", { key: b64(Buffer.from([0xff, 0x00, 0x01])), value: b64(Buffer.from([0, 1, 2, 255])) });
  await v3(etcd, "/v3/kv/put", { key: b64("other/key"), value: b64("") });
  const lease = await v3<{ ID: string }>(etcd, "/v3/lease/grant", { TTL: "600" });
  await v3(etcd, "/v3/kv/put", { key: b64("/app/v3/leased1"), value: b64("l1"), lease: lease.ID });
  await v3(etcd, "/v3/kv/put", { key: b64("/app/v3/leased2"), value: b64("l2"), lease: lease.ID });
  return { inOrder, leaseId: lease.ID };
}

let etcd: Etcd;
let kv: TestServer;

let filled: { inOrder: string[]; leaseId: string };

// One etcd and one kvctl for the whole file: the later tests follow on from the copy.
before(async () => {
  if (noEtcd !== false) return;
  etcd = await startEtcd();
  kv = await startServer();
  filled = await fill(etcd.url);
});
after(async () => {
  if (noEtcd !== false) return;
  await kv?.stop();
  await etcd?.stop();
});

test("migrate copies every kind of v2 node and every v3 key, leases with their remaining TTL", { skip: noEtcd }, async () => {
  const { inOrder, leaseId } = filled;

  const r = await runKvctl(["--endpoints", kv.url, "migrate", "--from", etcd.url], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^v2: 6 directories \(1 empty\), 9 keys; 2 hidden, 2 with a TTL; copied at index \d+$/m);
  assert.match(r.stdout, /^v3: 5 keys \(2 on 1 lease\); copied at revision \d+$/m);
  assert.equal(r.stderr, "", "no spinner or noise without a terminal");

  // The visible tree, node for node (TTLs to the nearest 10 s).
  assert.deepEqual(await tree(kv.url), await tree(etcd.url));
  // Hidden nodes, read by name (etcd never lists them).
  for (const path of ["/app/_secret", "/_hiddendir", "/_hiddendir/inside"]) assert.deepEqual(await tree(kv.url, path), await tree(etcd.url, path), path);
  assert.equal((await http("GET", `${kv.url}/v2/keys/app/_gone`)).status, 404);
  assert.equal((await http("GET", `${kv.url}/v2/keys/app/gone`)).status, 404);
  for (const k of inOrder) assert.equal(((await v2("GET", `${kv.url}/v2/keys${k}`)) as { node: Node }).node.key, k, "in-order key under its own name");
  const ttl = ((await v2("GET", `${kv.url}/v2/keys/app/ttl`)) as { node: Node }).node.ttl ?? 0;
  assert.ok(ttl > 580 && ttl <= 600, `remaining TTL ${ttl}`);

  // v3: the same keys and values; the leased keys on one lease with the remaining TTL.
  const [src, dst] = [await allV3(etcd.url), await allV3(kv.url)];
  assert.deepEqual(dst.map((x) => [x.key, x.value ?? ""]), src.map((x) => [x.key, x.value ?? ""]));
  const leased = dst.filter((x) => x.lease !== undefined && String(x.lease) !== "0");
  assert.equal(leased.length, 2);
  assert.equal(new Set(leased.map((x) => String(x.lease))).size, 1);
  assert.equal(String(leased[0]!.lease), leaseId, "the lease keeps its ID when it is free");
  const ttlv3 = await v3<{ TTL: string; keys?: string[] }>(kv.url, "/v3/lease/timetolive", { ID: leaseId, keys: true });
  assert.ok(Number(ttlv3.TTL) > 580 && Number(ttlv3.TTL) <= 600, `lease TTL ${ttlv3.TTL}`);
  assert.equal(ttlv3.keys?.length, 2);
});

test("migrate --prefix copies only the v2 subtree and the v3 keys under the prefix", { skip: noEtcd }, async () => {
  const kv2 = await startServer();
  try {
  const r = await runKvctl(["--endpoints", kv2.url, "migrate", "--from", etcd.url, "--prefix", "/app"], { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(await tree(kv2.url, "/app"), await tree(etcd.url, "/app"));
  assert.deepEqual(await tree(kv2.url, "/app/_secret"), await tree(etcd.url, "/app/_secret"));
  assert.equal((await http("GET", `${kv2.url}/v2/keys/queue`)).status, 404);
  assert.equal((await http("GET", `${kv2.url}/v2/keys/_hiddendir`)).status, 404);
  const keys = (await allV3(kv2.url)).map((x) => Buffer.from(x.key, "base64").toString());
  assert.deepEqual(keys, ["/app/v3/leased1", "/app/v3/leased2", "/app/v3/plain"]);
  } finally {
    await kv2.stop();
  }
});

test("migrate --follow applies etcd's later writes and deletes (v2 and v3) until interrupted", { skip: noEtcd }, async () => {
  const f = spawnKvctl(["--endpoints", kv.url, "migrate", "--from", etcd.url, "--follow"], { timeoutMs: 120_000 });
  await until(() => f.stderr().includes("following etcd's changes"), 30_000, "the copy then the follow");
  await v2("PUT", `${etcd.url}/v2/keys/app/config/db`, { value: "postgres://db2:5432" });
  await v2("DELETE", `${etcd.url}/v2/keys/app/config/cache`);
  await v2("PUT", `${etcd.url}/v2/keys/later/dir?dir=true`);
  await v2("PUT", `${etcd.url}/v2/keys/later/ttl`, { value: "t", ttl: "300" });
  const job = (await v2("POST", `${etcd.url}/v2/keys/queue`, { value: "fourth" })) as { node: Node };
  await v2("DELETE", `${etcd.url}/v2/keys/tmpdir?recursive=true`);
  await v3(etcd.url, "/v3/kv/put", { key: b64("/app/v3/plain"), value: b64("changed after the copy") });
  await v3(etcd.url, "/v3/kv/deleterange", { key: b64("other/key") });
  const lease = await v3<{ ID: string }>(etcd.url, "/v3/lease/grant", { TTL: "300" });
  await v3(etcd.url, "/v3/kv/put", { key: b64("/app/v3/new-leased"), value: b64("n"), lease: lease.ID });

  await until(async () => JSON.stringify(await tree(kv.url)) === JSON.stringify(await tree(etcd.url)), 10_000, "the v2 tree follows");
  assert.equal(((await v2("GET", `${kv.url}/v2/keys${job.node.key}`)) as { node: Node }).node.value, "fourth");
  const pairs = async (url: string): Promise<string> => JSON.stringify((await allV3(url)).map((x) => [x.key, x.value ?? "", String(x.lease ?? 0) !== "0"]));
  await until(async () => (await pairs(kv.url)) === (await pairs(etcd.url)), 10_000, "the v3 keys follow");
  const ttl = await v3<{ TTL: string }>(kv.url, "/v3/lease/timetolive", { ID: lease.ID });
  assert.ok(Number(ttl.TTL) > 280, `new lease granted with its remaining TTL (${ttl.TTL})`);

  // A lease kept alive on etcd stays alive on kvctl past its TTL; once etcd lets it expire, so does kvctl.
  const SHORT_TTL_S = 3;
  const short = await v3<{ ID: string }>(etcd.url, "/v3/lease/grant", { TTL: String(SHORT_TTL_S) });
  await v3(etcd.url, "/v3/kv/put", { key: b64("/app/v3/kept"), value: b64("k"), lease: short.ID });
  const keeper = spawn("/usr/bin/etcdctl", ["--endpoints", etcd.url, "lease", "keep-alive", BigInt(short.ID).toString(16)], {
    env: { PATH: process.env["PATH"] ?? "", ETCDCTL_API: "3" },
    stdio: "ignore",
  });
  procs.add(keeper);
  const kept = async (): Promise<boolean> => (await allV3(kv.url)).some((x) => Buffer.from(x.key, "base64").toString() === "/app/v3/kept");
  await until(kept, 5000, "the leased key arrives");
  // Nothing to wait for while a lease lives. kvctl's copy was granted (with at most the TTL)
  // before its key arrived: unrenewed, it is revoked by the TTL after that, then kvctl's
  // next expiry check (100 ms) and the revocation's commit. A second past the TTL is longer.
  const arrived = Date.now();
  await new Promise((r) => setTimeout(r, SHORT_TTL_S * 1000 + 1000));
  assert.ok(await kept(), `kept alive on kvctl while etcd's lease is kept alive (${Date.now() - arrived} ms > TTL ${SHORT_TTL_S} s)`);
  keeper.kill("SIGTERM");
  procs.delete(keeper);
  await until(async () => !(await kept()), 15_000, "gone from kvctl once etcd's lease expired");

  f.child.kill("SIGINT");
  const exit = await f.exited;
  assert.equal(exit.code, 0, f.stderr());
  assert.match(f.stdout(), /^followed: 6 v2 events \(to index \d+\), [45] v3 events \(to revision \d+\)$/m);
});

test("migrate: an unreachable source is exit 2 with a clear error", { skip: noEtcd }, async () => {
  const nobody = `http://127.0.0.1:${await freePort()}`;
  const r = await runKvctl(["--endpoints", kv.url, "migrate", "--from", nobody], { timeoutMs: 30_000 });
  assert.equal(r.code, 2);
  assert.match(r.stderr, new RegExp(`^Error:  cannot reach etcd at ${nobody}: `));
  const noFrom = await runKvctl(["--endpoints", kv.url, "migrate"]);
  assert.equal(noFrom.code, 1);
  assert.match(noFrom.stderr, /--from is required/);
});

async function sides(from: string, to: string): Promise<{ src: MigrateSide; dst: MigrateSide; close(): void }> {
  const mk = async (url: string): Promise<MigrateSide> => {
    const transport = await createNodeTransport();
    return { cluster: new ClusterClient({ endpoints: [url], transport }), v3: new V3Client({ endpoints: [url], transport }) };
  };
  const src = await mk(from);
  const dst = await mk(to);
  return { src, dst, close: () => (src.cluster.close(), dst.cluster.close()) };
}

test("a follow that fell out of etcd's history fails: v3 compacted, v2 event index cleared", { skip: noEtcd }, async () => {
  const s = await sides(etcd.url, kv.url);
  try {
  const counts = { v2Events: 0, v2Index: 1, v3Events: 0, v3Revision: 1 };
  // v3: compact past revision 2, then watch from it.
  const head = await v3<{ header: { revision: string } }>(etcd.url, "/v3/kv/range", { key: b64("x") });
  await v3(etcd.url, "/v3/kv/compaction", { revision: head.header.revision, physical: true });
  const signal = AbortSignal.timeout(20_000);
  await assert.rejects(
    followV3(s.src, s.dst, new LeaseMap(s.src.v3, s.dst.v3), { prefix: "", revision: 1, signal, counts }),
    (err: unknown) => err instanceof HistoryLostError && /revision 2 has been compacted/.test(err.message),
  );
  // v2: etcd keeps 1000 events; push index 1 out of them.
  const writes = Array.from({ length: 1010 }, (_, i) => i);
  const pending = new Set<Promise<unknown>>();
  for (const i of writes) {
    const p = http("PUT", `${etcd.url}/v2/keys/churn/k${i % 10}`, { value: String(i) }).finally(() => pending.delete(p));
    pending.add(p);
    if (pending.size >= 16) await Promise.race(pending);
  }
  await Promise.all(pending);
  await assert.rejects(
    followV2(s.src, s.dst, { prefix: "", index: 1, signal, counts }),
    (err: unknown) => err instanceof HistoryLostError && /no longer holds index 2/.test(err.message) && /1000 events/.test(err.message),
  );
  } finally {
    s.close();
  }
});
