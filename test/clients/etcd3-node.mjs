#!/usr/bin/env node
// Drives npm `etcd3` (Microsoft's Node client, 1.1, over @grpc/grpc-js) through its API
// against one etcd v3 endpoint and prints one normalised line per step, so that a run
// against etcd 3.4.23 and one against kvctl can be diffed.
//
// Normalised: revisions relative to the revision the scenario starts at (r+N), lease ids
// as L1, L2… in order of appearance, times as bounds. Errors print as the class the
// client cast them to and its message: the client picks the class from etcd's message
// text, so a different wording shows as a different class.
//
// Usage: node etcd3-node.mjs --port P [--modules DIR] [--wait S]
//   --modules: the node_modules folder holding etcd3 (default: $KVCTL_NPM_CLIENTS, else
//   /tmp/rc-npm/node_modules). Exit status 0 unless the scenario itself broke.
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: opts } = parseArgs({ options: { port: { type: "string" }, modules: { type: "string" }, wait: { type: "string" } } });
const modules = opts.modules ?? process.env.KVCTL_NPM_CLIENTS ?? "/tmp/rc-npm/node_modules";
const require = createRequire(join(modules, "noop.js"));
const etcd3 = require("etcd3");
const { Etcd3 } = etcd3;
const { noop } = require("cockatiel");
// No retries and no circuit breaker: each step's own answer is printed, not the breaker
// that three recoverable errors in a row open (the defaults are shown by one step).
const plain = { faultHandling: { host: () => noop, global: noop } };

const host = `127.0.0.1:${opts.port}`;
const STEP_MS = 10_000; // each awaited step: a hang shows as TIMEOUT, not a stuck run
let base = 0;
const leaseNames = new Map();

const out = (name, text) => process.stdout.write(`${name}: ${text}\n`);
const section = (name) => process.stdout.write(`## ${name}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rel = (rev) => (Number(rev) ? `r+${Number(rev) - base}` : "0");
const leaseName = (id) => {
  if (id === undefined || id === null || String(id) === "0") return "0";
  const k = String(id);
  if (!leaseNames.has(k)) leaseNames.set(k, `L${leaseNames.size + 1}`);
  return leaseNames.get(k);
};
const describeError = (e) =>
  `ERR ${e?.constructor?.name ?? typeof e}: ${String(e?.message ?? e)
    .replace(/^[A-Za-z]+Error: /, "")
    .replace(/Lease (\d{6,})/, (_, id) => `Lease ${leaseName(id)}`)}`;
const withTimeout = (p, ms = STEP_MS) =>
  Promise.race([p, new Promise((_, rej) => setTimeout(() => rej(new Error(`TIMEOUT after ${ms} ms`)), ms).unref())]);
async function step(name, fn) {
  try {
    out(name, await withTimeout(Promise.resolve().then(fn)));
  } catch (e) {
    out(name, describeError(e));
  }
}
const kv = (k) => (k?.key ? `${k.key.toString()}=${k.value.toString()} c=${rel(k.create_revision)} m=${rel(k.mod_revision)} v=${k.version} l=${leaseName(k.lease)}` : "none");
const kvs = (list) => `[${list.map((k) => `${k.key.toString()}=${k.value.toString()}`).join(", ")}]`;
const rec = (o) => `[${Object.entries(o).map(([k, v]) => `${k}=${v}`).join(", ")}]`;
const hdr = (r) => `rev=${rel(r.header.revision)}`;
/** Cancels a watcher; bounded, as etcd3's cancel of a watcher the server ended never settles. */
const cancel = (w) => Promise.race([w.cancel().then(() => "", describeError), sleep(1000).then(() => "cancel pending")]);
/** Resolves with the first `n` events a watcher emits (of `kinds`), or what it got by `ms`. */
function collect(w, n, ms = 5000, kinds = ["put", "delete"]) {
  const got = [];
  return new Promise((resolve) => {
    const done = () => resolve(got.join("; ") || "none");
    const t = setTimeout(done, ms);
    for (const kind of kinds)
      w.on(kind, (k, prev) => {
        got.push(`${kind} ${k.key.toString()}=${k.value.toString()} m=${rel(k.mod_revision)}${prev ? ` prev=${prev.value.toString()}` : ""}`);
        if (got.length >= n) {
          clearTimeout(t);
          done();
        }
      });
  });
}

async function main() {
  const client = new Etcd3({ hosts: host, ...plain });
  if (opts.wait) {
    const until = Date.now() + Number(opts.wait) * 1000;
    for (;;) {
      try {
        await client.get("ready-probe").string();
        break;
      } catch (e) {
        if (Date.now() > until) throw e;
        await sleep(200);
      }
    }
  }
  base = Number((await client.put("base").value("0").exec()).header.revision);

  section("kv");
  await step("put a=1", async () => hdr(await client.put("a").value("1").exec()));
  await step("put a=2 getPrevious", async () => kv(await client.put("a").value("2").getPrevious()));
  await step("put fresh getPrevious", async () => kv(await client.put("fresh").value("x").getPrevious()));
  await step("get a string", () => client.get("a").string());
  await step("get a number", () => client.get("a").number());
  await step("put json, get json", async () => {
    await client.put("j").value(JSON.stringify({ x: [1, 2] })).exec();
    return JSON.stringify(await client.get("j").json());
  });
  await step("get j bad json", async () => {
    await client.put("nj").value("{not").exec();
    return JSON.stringify(await client.get("nj").json());
  });
  await step("get a buffer", async () => (await client.get("a").buffer()).toString("hex"));
  await step("get missing string", async () => String(await client.get("missing").string()));
  await step("get missing exists", async () => String(await client.get("missing").exists()));
  await step("get a exists", async () => String(await client.get("a").exists()));
  await step("get a exec", async () => {
    const r = await client.get("a").exec();
    return `${hdr(r)} count=${r.count} more=${r.more} ${kv(r.kvs[0])}`;
  });
  await step("get a revision r+1", async () => client.get("a").revision(base + 1).string());
  await step("get a serializable", () => client.get("a").serializable(true).string());
  await step("put empty key", async () => hdr(await client.put("").value("v").exec()));
  await step("put empty value", async () => {
    await client.put("empty").value("").exec();
    return JSON.stringify(await client.get("empty").string());
  });
  await step("put binary", async () => {
    await client.put(Buffer.from([0, 1, 0xfe])).value(Buffer.from([0xff, 0])).exec();
    return (await client.get(Buffer.from([0, 1, 0xfe])).buffer()).toString("hex");
  });
  await step("put utf8", async () => {
    await client.put("ü").value("värde").exec();
    return client.get("ü").string();
  });
  await step("put 1.6MiB", async () => hdr(await client.put("big").value(Buffer.alloc(1_600_000, 97)).exec()));
  await step("put 3MiB", async () => hdr(await client.put("big").value(Buffer.alloc(3 * 1024 * 1024, 97)).exec()));
  await step("put 3MiB, default fault handling, then get", async () => {
    const c = new Etcd3({ hosts: host });
    const first = await c.put("big").value(Buffer.alloc(3 * 1024 * 1024, 97)).exec().then(hdr, describeError);
    const then = await c.get("a").string().then(String, describeError);
    c.close();
    return `${first} / ${then}`;
  });
  await step("put ignoreLease on missing", async () => hdr(await client.put("nokey").value("v").ignoreLease().exec()));
  await step("put to lease 12345 (missing)", async () => hdr(await client.put("leased").value("v").lease("12345").exec()));
  for (const [k, v] of [["p/c", "1"], ["p/a", "3"], ["p/b", "2"], ["p/b", "22"], ["p/d", "0"], ["q", "9"]]) await client.put(k).value(v).exec();
  await step("getAll prefix p/ strings", async () => rec(await client.getAll().prefix("p/").strings()));
  await step("getAll prefix p/ keys", async () => (await client.getAll().prefix("p/").keys()).join(","));
  await step("getAll prefix p/ count", async () => String(await client.getAll().prefix("p/").count()));
  await step("getAll prefix p/ limit 2", async () => rec(await client.getAll().prefix("p/").limit(2).strings()));
  await step("getAll prefix p/ limit 2 exec", async () => {
    const r = await client.getAll().prefix("p/").limit(2).exec();
    return `count=${r.count} more=${r.more} ${kvs(r.kvs)}`;
  });
  await step("getAll sort Value Descend", async () => kvs((await client.getAll().prefix("p/").sort("Value", "Descend").exec()).kvs));
  await step("getAll sort Version Ascend", async () => kvs((await client.getAll().prefix("p/").sort("Version", "Ascend").exec()).kvs));
  await step("getAll sort Create Descend", async () => kvs((await client.getAll().prefix("p/").sort("Create", "Descend").exec()).kvs));
  await step("getAll sort Mod Ascend", async () => kvs((await client.getAll().prefix("p/").sort("Mod", "Ascend").exec()).kvs));
  await step("getAll sort Key Descend", async () => kvs((await client.getAll().prefix("p/").sort("Key", "Descend").exec()).kvs));
  await step("getAll inRange p/a..p/c", async () => rec(await client.getAll().inRange({ start: "p/a", end: "p/c" }).strings()));
  await step("getAll inRange Range.prefix", async () => rec(await client.getAll().inRange(etcd3.Range.prefix("p/")).strings()));
  await step("getAll prefix none/", async () => rec(await client.getAll().prefix("none/").strings()));
  await step("getAll prefix p/ numbers", async () => rec(await client.getAll().prefix("p/").numbers()));
  await step("getAll prefix p/ keysOnly exec", async () => kvs((await client.getAll().prefix("p/").keys().then(async () => client.getAll().prefix("p/").exec())).kvs));
  await step("getAll prefix p/ minCreateRevision", async () => rec(await client.getAll().prefix("p/").minCreateRevision(base + 1).maxModRevision(base + 100).strings()));
  await step("delete key p/d getPrevious", async () => (await client.delete().key("p/d").getPrevious()).map(kv).join("; "));
  await step("delete missing exec", async () => {
    const r = await client.delete().key("p/none").exec();
    return `${hdr(r)} deleted=${r.deleted}`;
  });
  await step("delete range p/a..p/b exec", async () => `deleted=${(await client.delete().range({ start: "p/a", end: "p/b" }).exec()).deleted}`);
  await step("delete prefix p/ getPrevious", async () => (await client.delete().prefix("p/").getPrevious()).map(kv).join("; "));
  await step("getAll prefix p/ after", async () => rec(await client.getAll().prefix("p/").strings()));

  section("txn");
  await step("if a==2 then put, else get", async () => {
    const r = await client.if("a", "Value", "==", "2").then(client.put("a").value("3")).else(client.get("a")).commit();
    return `succeeded=${r.succeeded} ${hdr(r)} responses=${r.responses.map((x) => x.response).join(",")}`;
  });
  await step("if a==2 (now 3) then put, else get", async () => {
    const r = await client.if("a", "Value", "==", "2").then(client.put("a").value("4")).else(client.get("a")).commit();
    return `succeeded=${r.succeeded} ${r.responses.map((x) => `${x.response}:${x.response_range ? kvs(x.response_range.kvs) : ""}`).join(",")}`;
  });
  await step("if missing Create==0 then put", async () => (await client.if("t/new", "Create", "==", 0).then(client.put("t/new").value("n")).commit()).succeeded);
  await step("if t/new Create==0 again", async () => (await client.if("t/new", "Create", "==", 0).then(client.put("t/new").value("n2")).commit()).succeeded);
  await step("if a Version>1 and Mod<big", async () => (await client.if("a", "Version", ">", 1).and("a", "Mod", "<", base + 1000).then(client.get("a")).commit()).succeeded);
  await step("if a Value!=3 (fails)", async () => (await client.if("a", "Value", "!=", "3").then(client.put("x").value("x")).commit()).succeeded);
  await step("if a Lease==0", async () => (await client.if("a", "Lease", "==", 0).commit()).succeeded);
  await step("if a Value<'4'", async () => (await client.if("a", "Value", "<", "4").commit()).succeeded);
  await step("txn delete then get", async () => {
    const r = await client.if("t/new", "Version", ">", 0).then(client.delete().key("t/new"), client.get("t/new")).commit();
    return r.responses.map((x) => `${x.response}:${x.response_delete_range?.deleted ?? x.response_range?.count}`).join(",");
  });
  await step("txn same key twice", async () => (await client.if("a", "Version", ">", 0).then(client.put("d").value("1"), client.put("d").value("2")).commit()).succeeded);
  await step("txn put then delete same key", async () => (await client.if("a", "Version", ">", 0).then(client.put("d").value("1"), client.delete().key("d")).commit()).succeeded);

  section("lease");
  const lease = client.lease(10, { autoKeepAlive: false });
  await step("grant 10", async () => leaseName(await lease.grant()));
  await step("lease put l/a", async () => hdr(await lease.put("l/a").value("x").exec()));
  await step("get l/a lease", async () => kv((await client.get("l/a").exec()).kvs[0]));
  await step("keepaliveOnce", async () => {
    const r = await lease.keepaliveOnce();
    return `id=${leaseName(r.ID)} ttl=${r.TTL}`;
  });
  await step("leaseTimeToLive keys", async () => {
    const r = await client.leaseClient.leaseTimeToLive({ ID: await lease.grant(), keys: true });
    return `id=${leaseName(r.ID)} granted=${r.grantedTTL} ttl<=10=${Number(r.TTL) <= 10 && Number(r.TTL) >= 8} keys=${r.keys.map(String).join(",")}`;
  });
  await step("leaseLeases count", async () => `leases=${(await client.leaseClient.leaseLeases({})).leases.length}`);
  await step("revoke", async () => String(await lease.revoke()));
  await step("revoked()", () => String(lease.revoked()));
  await step("get l/a after revoke", async () => String(await client.get("l/a").string()));
  await step("keepaliveOnce after revoke", async () => JSON.stringify(await lease.keepaliveOnce()));
  await step("revoke again", async () => String(await client.leaseClient.leaseRevoke({ ID: await lease.grant() })));
  await step("put to revoked lease", async () => hdr(await client.put("l/b").value("v").lease(await lease.grant()).exec()));
  await step("lease ttl 0", () => leaseName(client.lease(0)));
  await step("leaseTimeToLive missing", async () => {
    const r = await client.leaseClient.leaseTimeToLive({ ID: 4242 });
    return `ttl=${r.TTL} granted=${r.grantedTTL}`;
  });
  await step("leaseGrant fixed id 777", async () => {
    const r = await client.leaseClient.leaseGrant({ ID: 777, TTL: 30 });
    return `id=${r.ID} ttl=${r.TTL} error=${JSON.stringify(r.error)}`;
  });
  await step("leaseGrant fixed id 777 again", async () => String((await client.leaseClient.leaseGrant({ ID: 777, TTL: 30 })).ID));
  await step("leaseRevoke 777", async () => String(await client.leaseClient.leaseRevoke({ ID: 777 }).then(() => "ok")));
  await step("leaseRevoke missing", async () => String(await client.leaseClient.leaseRevoke({ ID: 4242 }).then(() => "ok")));

  // Auto keepalive: a 2 s lease kept for 4 s, its key still there; then released (no
  // more keepalives) and expiring by itself: the key gone, `lost` emitted on keepaliveOnce.
  const kept = client.lease(2);
  await step("keepalive: grant 2, put", async () => {
    await kept.put("k/alive").value("1").exec();
    return leaseName(await kept.grant());
  });
  await step("keepalive: after 4 s", async () => {
    let ok = 0;
    kept.on("keepaliveSucceeded", () => ok++);
    await sleep(4000);
    return `key=${await client.get("k/alive").string()} keepalives>=3=${ok >= 3}`;
  });
  await step("keepalive: released, after 4 s", async () => {
    kept.release();
    await sleep(4000);
    return `key=${await client.get("k/alive").string()}`;
  });
  await step("keepaliveOnce expired", async () => JSON.stringify(await kept.keepaliveOnce()));
  const lost = client.lease(1);
  await step("lease 1: lost event when revoked by another", async () => {
    const id = await lost.grant();
    const ev = new Promise((resolve) => lost.on("lost", (e) => resolve(describeError(e))));
    await client.leaseClient.leaseRevoke({ ID: id });
    return await ev;
  });

  section("watch");
  await step("watch key w/a: put, put, delete", async () => {
    const w = await client.watch().key("w/a").create();
    const got = collect(w, 3);
    await client.put("w/a").value("1").exec();
    await client.put("w/a").value("2").exec();
    await client.delete().key("w/a").exec();
    const r = await got;
    await w.cancel();
    return r;
  });
  await step("watch prefix w/ withPreviousKV", async () => {
    const w = await client.watch().prefix("w/").withPreviousKV().create();
    const got = collect(w, 3);
    await client.put("w/b").value("1").exec();
    await client.put("w/c").value("1").exec();
    await client.put("w/b").value("2").exec();
    const r = await got;
    await w.cancel();
    return r;
  });
  await step("watch ignore delete", async () => {
    const w = await client.watch().prefix("w/").ignore("delete").create();
    const got = collect(w, 2);
    await client.delete().key("w/b").exec();
    await client.put("w/d").value("1").exec();
    await client.put("w/e").value("1").exec();
    const r = await got;
    await w.cancel();
    return r;
  });
  await step("watch only delete", async () => {
    const w = await client.watch().prefix("w/").only("delete").create();
    const got = collect(w, 1);
    await client.put("w/f").value("1").exec();
    await client.delete().key("w/f").exec();
    const r = await got;
    await w.cancel();
    return r;
  });
  await step("watch inRange w/c..w/e", async () => {
    const w = await client.watch().inRange({ start: "w/c", end: "w/e" }).create();
    const got = collect(w, 2);
    await client.put("w/e").value("2").exec();
    await client.put("w/c").value("2").exec();
    await client.put("w/d").value("2").exec();
    const r = await got;
    await w.cancel();
    return r;
  });
  let histStart = 0;
  await step("watch startRevision (history)", async () => {
    histStart = Number((await client.put("h").value("1").exec()).header.revision);
    await client.put("h").value("2").exec();
    const w = client.watch().key("h").startRevision(String(histStart)).watcher();
    const got = collect(w, 2);
    const r = await got;
    await w.cancel();
    return r;
  });
  await step("watch data/connected events", async () => {
    const w = client.watch().key("h").watcher();
    const seen = [];
    w.on("connecting", () => seen.push("connecting"));
    w.on("connected", (res) => seen.push(`connected created=${res.created}`));
    w.on("data", (res) => seen.push(`data events=${res.events.length}`));
    await new Promise((r) => w.once("connected", r));
    // Listening before the put: whether its event or its response comes first is not
    // fixed (etcd: mostly the response, kvctl: mostly the event).
    const data = new Promise((r) => w.once("data", r));
    await client.put("h").value("3").exec();
    await data;
    w.on("end", () => seen.push("end"));
    await w.cancel();
    return seen.join(", ");
  });
  await step("watcher lastRevision", async () => {
    const w = await client.watch().key("h").create();
    const got = collect(w, 1);
    await client.put("h").value("4").exec();
    await got;
    const r = rel(w.lastRevision());
    await w.cancel();
    return r;
  });
  await step("compact to now", async () => {
    const rev = Number((await client.put("h").value("5").exec()).header.revision);
    await client.kv.compact({ revision: rev, physical: true });
    return rel(rev);
  });
  await step("get at compacted revision", async () => client.get("h").revision(histStart).string());
  await step("compact again (old)", async () => String(await client.kv.compact({ revision: histStart }).then(() => "ok")));
  await step("compact future", async () => String(await client.kv.compact({ revision: histStart + 100000 }).then(() => "ok")));
  await step("watch from compacted revision", async () => {
    const w = client.watch().key("h").startRevision(String(histStart)).watcher();
    const seen = [];
    const done = new Promise((resolve) => {
      w.on("error", (e) => {
        seen.push(`error ${describeError(e)}`);
        resolve();
      });
      w.on("disconnected", (e) => seen.push(`disconnected ${describeError(e)}`));
      w.on("data", (res) => seen.push(`data canceled=${res.canceled} compact=${rel(res.compact_revision)} reason=${JSON.stringify(res.cancel_reason)}`));
      w.on("put", (k) => seen.push(`put ${k.value.toString()}`));
      setTimeout(resolve, 3000);
    });
    await done;
    await cancel(w);
    return seen.join("; ") || "none";
  });

  section("lock");
  await step("lock acquire", async () => {
    const l = client.lock("lk");
    await l.acquire();
    const second = await client.lock("lk").acquire().then(() => "acquired", describeError);
    const keys = (await client.getAll().prefix("lk").keys()).length;
    const lease = leaseName(await l.leaseId());
    await l.release();
    const after = await client.lock("lk").ttl(5).acquire().then(async (x) => {
      await x.release();
      return "acquired";
    }, describeError);
    return `second=${second} keys=${keys} lease=${lease} after=${after}`;
  });
  await step("lock do", async () => String(await client.lock("lk2").do(async () => (await client.getAll().prefix("lk2").keys()).length)));
  await step("lock release without acquire", async () => String(await client.lock("lk3").release().then(() => "ok")));

  section("election");
  await step("campaign, leader, observe, proclaim, resign", async () => {
    const e1 = client.election("el", 5);
    const e2 = client.election("el", 5);
    const seen = [];
    const c1 = e1.campaign("one");
    await new Promise((r, j) => (c1.on("elected", r), c1.on("error", j)));
    seen.push(`leader=${await e1.leader()}`);
    const obs = await e2.observe();
    seen.push(`observer=${obs.leader()}`);
    const changes = [];
    obs.on("change", (v) => changes.push(String(v)));
    const c2 = e2.campaign("two");
    let elected2 = false;
    c2.on("elected", () => (elected2 = true));
    await sleep(300);
    seen.push(`two elected before resign=${elected2}`);
    await c1.proclaim("one-b");
    await sleep(300);
    seen.push(`leader=${await e2.leader()}`);
    await c1.resign();
    await c2.wait();
    seen.push(`two elected=${elected2} leader=${await e1.leader()}`);
    await sleep(300);
    seen.push(`changes=${changes.join(",")}`);
    await c2.resign();
    seen.push(`after resign leader=${await e1.leader()}`);
    await obs.cancel();
    return seen.join(" ");
  });
  await step("proclaim after resign", async () => {
    const c = client.election("el2", 5).campaign("x");
    await c.wait();
    await c.resign();
    return String(await c.proclaim("y").then(() => "ok"));
  });

  section("namespace");
  const ns = client.namespace("ns/");
  await step("ns put a, root get", async () => {
    await ns.put("a").value("1").exec();
    return `root=${await client.get("ns/a").string()} ns=${await ns.get("a").string()}`;
  });
  await step("ns getAll keys", async () => {
    await ns.put("b").value("2").exec();
    return (await ns.getAll().keys()).join(",");
  });
  await step("ns nested", async () => {
    await ns.namespace("in/").put("c").value("3").exec();
    return (await client.getAll().prefix("ns/").keys()).join(",");
  });
  await step("ns txn", async () => (await ns.if("a", "Value", "==", "1").then(ns.put("a").value("11")).commit()).succeeded + ` ${await client.get("ns/a").string()}`);
  await step("ns lease put", async () => {
    const l = ns.lease(10, { autoKeepAlive: false });
    await l.put("l").value("1").exec();
    const r = kv((await client.get("ns/l").exec()).kvs[0]);
    await l.revoke();
    return r;
  });
  await step("ns watch", async () => {
    const w = await ns.watch().key("a").create();
    const got = collect(w, 1);
    await client.put("ns/a").value("root").exec();
    const r = await got;
    await w.cancel();
    return r;
  });
  await step("ns lock", async () => {
    const l = await ns.lock("m").acquire();
    const r = (await client.getAll().prefix("ns/m").keys()).length;
    await l.release();
    return String(r);
  });
  await step("ns delete all", async () => {
    await ns.delete().all().exec();
    return `ns=${(await client.getAll().prefix("ns/").keys()).length} a=${await client.get("a").string()}`;
  });

  section("stm");
  await client.put("s/x").value("1").exec();
  await client.put("s/y").value("1").exec();
  await step("stm move", async () => {
    const r = await client.stm().transact(async (tx) => {
      const x = Number(await tx.get("s/x").string());
      const y = Number(await tx.get("s/y").string());
      await tx.put("s/x").value(String(x - 1));
      await tx.put("s/y").value(String(y + 1));
      return x + y;
    });
    return `sum=${r} x=${await client.get("s/x").string()} y=${await client.get("s/y").string()}`;
  });
  // etcd3's Isolation is a const enum (not exported at run time): its values.
  const levels = { SerializableSnapshot: 0, Serializable: 1, RepeatableReads: 2, ReadCommitted: 3 };
  for (const isolation of Object.keys(levels)) {
    await step(`stm conflict ${isolation}`, async () => {
      let tries = 0;
      const level = levels[isolation];
      const r = await client.stm({ isolation: level, retries: 3 }).transact(async (tx) => {
        tries++;
        const x = Number(await tx.get("s/x").string());
        if (tries === 1) await client.put("s/x").value(String(x + 100)).exec();
        await tx.put("s/y").value(String(x));
        return x;
      });
      return `tries=${tries} read=${r} y=${await client.get("s/y").string()}`;
    });
  }
  await step("stm conflict every try", async () => {
    let tries = 0;
    return String(
      await client.stm({ retries: 2 }).transact(async (tx) => {
        tries++;
        const x = Number(await tx.get("s/x").string());
        await client.put("s/x").value(String(x + 1)).exec();
        await tx.put("s/y").value("z");
      }).then(() => `ok tries=${tries}`, (e) => `${describeError(e)} tries=${tries}`),
    );
  });
  await step("stm delete", async () => {
    await client.stm().transact(async (tx) => {
      await tx.get("s/x").string();
      await tx.delete().key("s/x");
    });
    return String(await client.get("s/x").string());
  });

  section("cluster and maintenance");
  await step("status", async () => {
    const s = await client.maintenance.status();
    return `version=${s.version} leader=member:${s.leader === s.header.member_id} dbSize>0=${Number(s.dbSize) > 0}`;
  });
  await step("memberList", async () => {
    const r = await client.cluster.memberList({});
    return `members=${r.members.length} names=${r.members.map((m) => m.name).join(",")} clientURLs=${r.members.map((m) => m.clientURLs.length).join(",")}`;
  });
  await step("alarm get", async () => `alarms=${(await client.maintenance.alarm({ action: "Get", alarm: "None" })).alarms.length}`);
  await step("hash", async () => `hash=${typeof (await client.maintenance.hash({})).hash}`);
  await step("defragment", async () => `ok=${typeof (await client.maintenance.defragment({}))}`);

  section("auth");
  await step("getUsers (none)", async () => (await client.getUsers()).map((u) => u.name).join(","));
  await step("user alice create", async () => (await client.user("alice").create("pw")).name);
  await step("user alice create again", async () => (await client.user("alice").create("pw")).name);
  await step("role reader create", async () => (await client.role("reader").create()).name);
  await step("role reader create again", async () => (await client.role("reader").create()).name);
  await step("role reader grant Read on au/ prefix", async () => (await client.role("reader").grant({ permission: "Read", range: client.range({ prefix: "au/" }) })).name);
  await step("role reader grant Readwrite on au/w key", async () => (await client.role("reader").grant({ permission: "Readwrite", range: "au/w" })).name);
  await step("role reader permissions", async () => (await client.role("reader").permissions()).map((p) => `${p.permission}:${p.range.start.toString()}..${p.range.end.toString()}`).join(", "));
  await step("alice addRole reader", async () => (await client.user("alice").addRole("reader")).name);
  await step("alice addRole missing", async () => (await client.user("alice").addRole("nope")).name);
  await step("alice roles", async () => (await client.user("alice").roles()).map((r) => r.name).join(","));
  await step("alice removeRole never granted", async () => (await client.user("alice").removeRole("root")).name);
  await step("user missing delete", async () => (await client.user("bob").delete()).name);
  await step("role missing delete", async () => (await client.role("nope").delete()).name);
  await step("role missing permissions", async () => JSON.stringify(await client.role("nope").permissions()));
  await step("getRoles", async () => (await client.getRoles()).map((r) => r.name).join(","));
  await step("getUsers", async () => (await client.getUsers()).map((u) => u.name).join(","));
  await step("auth enable without root", async () => JSON.stringify(await client.auth.authEnable({})).slice(0, 0) + "ok");
  await step("root create, addRole root", async () => {
    await client.user("root").create("rootpw");
    await client.user("root").addRole("root");
    return (await client.user("root").roles()).map((r) => r.name).join(",");
  });
  await client.put("au/r").value("readable").exec();
  await step("auth enable", async () => (await client.auth.authEnable({}), "ok"));
  await step("anonymous get after enable", () => client.get("au/r").string());
  await step("anonymous put after enable", async () => hdr(await client.put("au/w").value("x").exec()));
  const alice = new Etcd3({ hosts: host, ...plain, auth: { username: "alice", password: "pw" } });
  await step("alice get au/r", () => alice.get("au/r").string());
  await step("alice put au/w", async () => `ok ${(await alice.put("au/w").value("ok").exec()).header !== undefined}`);
  await step("alice put au/r (read only)", async () => hdr(await alice.put("au/r").value("no").exec()));
  await step("alice get outside", () => alice.get("a").string());
  await step("alice getAll au/ prefix", async () => rec(await alice.getAll().prefix("au/").strings()));
  await step("alice delete au/w", async () => `deleted=${(await alice.delete().key("au/w").exec()).deleted}`);
  await step("alice txn compare outside", async () => (await alice.if("a", "Version", ">", 0).then(alice.get("au/r")).commit()).succeeded);
  await step("alice lease put", async () => {
    const l = alice.lease(5, { autoKeepAlive: false });
    const r = hdr(await l.put("au/w").value("leased").exec());
    await l.revoke();
    return r;
  });
  await step("alice watch outside", async () => {
    const w = alice.watch().key("a").watcher();
    const r = await new Promise((resolve) => {
      w.on("error", (e) => resolve(`error ${describeError(e)}`));
      w.on("connected", (res) => resolve(`connected canceled=${res.canceled} reason=${res.cancel_reason}`));
      w.on("data", (res) => resolve(`data canceled=${res.canceled} reason=${res.cancel_reason}`));
      setTimeout(() => resolve("none"), 3000);
    });
    await cancel(w);
    return r;
  });
  await step("alice user list", async () => (await alice.getUsers()).map((u) => u.name).join(","));
  await step("alice lock outside", async () => String(await alice.lock("lk9").acquire().then(() => "acquired")));
  alice.close();
  const wrong = new Etcd3({ hosts: host, ...plain, auth: { username: "alice", password: "bad" } });
  await step("wrong password get", () => wrong.get("au/r").string());
  wrong.close();
  const nobody = new Etcd3({ hosts: host, ...plain, auth: { username: "nobody", password: "x" } });
  await step("unknown user get", () => nobody.get("au/r").string());
  nobody.close();
  const root = new Etcd3({ hosts: host, ...plain, auth: { username: "root", password: "rootpw" } });
  await step("root get a", () => root.get("a").string());
  await step("root put au/r", async () => `ok ${(await root.put("au/r").value("by-root").exec()).header !== undefined}`);
  await step("root revoke alice's au/ read", async () => (await root.role("reader").revoke({ permission: "Read", range: root.range({ prefix: "au/" }) })).name);
  await step("root revoke again", async () => (await root.role("reader").revoke({ permission: "Read", range: root.range({ prefix: "au/" }) })).name);
  const alice2 = new Etcd3({ hosts: host, ...plain, auth: { username: "alice", password: "pw" } });
  await step("alice get au/r after revoke", () => alice2.get("au/r").string());
  await step("root setPassword alice", async () => (await root.user("alice").setPassword("pw2")).name);
  await step("alice (old password, new client) get au/w", async () => {
    const c = new Etcd3({ hosts: host, ...plain, auth: { username: "alice", password: "pw" } });
    try {
      return await c.get("au/w").string();
    } finally {
      c.close();
    }
  });
  alice2.close();
  await step("root delete role root", async () => (await root.role("root").delete()).name);
  await step("root removeRole root from root", async () => (await root.user("root").removeRole("root")).name);
  await step("root delete user root", async () => (await root.user("root").delete()).name);
  await step("root auth disable", async () => (await root.auth.authDisable({}), "ok"));
  await step("anonymous get after disable", () => client.get("au/r").string());
  root.close();
  await step("role reader delete", async () => (await client.role("reader").delete()).name);
  await step("user alice delete", async () => (await client.user("alice").delete()).name);
  await step("getUsers at end", async () => (await client.getUsers()).map((u) => u.name).join(","));

  client.close();
}

// A promise nothing keeps pending (no timer, no open call) lets Node end early with status
// 0: that is a broken run, not a result.
process.on("beforeExit", () => {
  process.stderr.write("scenario broke: the event loop emptied before the end\n");
  process.exit(1);
});
main().then(
  () => {
    process.stdout.write("## end\n");
    process.exit(0);
  },
  (e) => {
    process.stderr.write(`scenario broke: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
