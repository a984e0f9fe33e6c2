#!/usr/bin/env node
// Drives npm `node-etcd` (7.0, the v2 HTTP client over `request`) through its API against
// one etcd v2 endpoint and prints one normalised line per step, so that a run against
// etcd 3.4.23 and one against kvctl can be diffed.
//
// Normalised: indexes relative to the index the scenario starts at (i+N), TTLs and
// expirations as bounds, stats' ids and times as their type. Auth: v2 users and roles set
// up over HTTP, then the client with its `auth` option (basic auth). The synchronous calls
// (setSync, getSync…) need `deasync`'s native build and are not driven.
//
// Usage: node node-etcd.mjs --port P [--modules DIR] [--wait S]
//   --modules: the node_modules folder holding node-etcd (default: $KVCTL_NPM_CLIENTS,
//   else /tmp/rc-npm/node_modules). Exit status 0 unless the scenario itself broke.
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: opts } = parseArgs({ options: { port: { type: "string" }, modules: { type: "string" }, wait: { type: "string" } } });
const modules = opts.modules ?? process.env.KVCTL_NPM_CLIENTS ?? "/tmp/rc-npm/node_modules";
const require = createRequire(join(modules, "noop.js"));
const Etcd = require("node-etcd");

const host = `127.0.0.1:${opts.port}`;
let base = 0;
const out = (name, text) => process.stdout.write(`${name}: ${text}\n`);
const section = (name) => process.stdout.write(`## ${name}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rel = (i) => (i === undefined ? "-" : Number(i) === 0 ? "0" : `i+${Number(i) - base}`);
const ttl = (t) => (t === undefined ? "" : ` ttl=${t >= 1 && t <= 60 ? "1..60" : t}`);
function node(n) {
  if (!n) return "none";
  // A listing without sorted=true comes in Go's map order: printed by key.
  const kids = n.nodes ? ` nodes=[${[...n.nodes].sort((x, y) => (x.key < y.key ? -1 : 1)).map(node).join(", ")}]` : "";
  const value = n.dir ? "dir" : `=${JSON.stringify(n.value)}`;
  return `${n.key ?? "/"}${value} c=${rel(n.createdIndex)} m=${rel(n.modifiedIndex)}${ttl(n.ttl)}${n.expiration ? " exp" : ""}${kids}`;
}
function body(b) {
  if (typeof b !== "object" || b === null) return JSON.stringify(b);
  return `${b.action} ${node(b.node)}${b.prevNode ? ` prev=${node(b.prevNode)}` : ""}`;
}
// Compare failures and cleared histories name indexes in their cause: "[24 != 25]",
// "[50/39]"; those print relative too.
const causeOf = (c) => String(c).replace(/\[(\d+)( != |\/)(\d+)\]/, (_, a, sep, b) => `[${rel(a)}${sep}${rel(b)}]`);
function error(e) {
  if (e.errorCode !== undefined) return `ERR ${e.errorCode} ${e.message} cause=${causeOf(e.error?.cause)} index=${rel(e.error?.index)}`;
  if (e.errors) return `ERR ${e.message}: ${e.errors.map((x) => x.httpstatus ?? x.httperror?.code).join(",")}`;
  return `ERR ${e.message}`;
}
const headers = (h) => `etcd-index=${rel(h["x-etcd-index"])} raft-index=${h["x-raft-index"] ? "int" : "-"} raft-term=${h["x-raft-term"] ? "int" : "-"} cluster-id=${h["x-etcd-cluster-id"] ? "hex" : "-"}`;

/** Calls `method(...args, callback)`; resolves with [err, body, headers]. */
function call(client, method, ...args) {
  return new Promise((resolve) => client[method](...args, (err, b, h) => resolve([err, b, h ?? {}])));
}
async function step(name, client, method, ...args) {
  const [err, b] = await call(client, method, ...args);
  out(name, err ? error(err) : body(b));
}
/** The first `n` events a watcher emits (of `kinds`), or what it got by `ms`. */
function events(w, n, kinds, ms = 5000) {
  const got = [];
  return new Promise((resolve) => {
    const done = () => resolve(got.join("; ") || "none");
    const t = setTimeout(done, ms);
    for (const kind of kinds)
      w.on(kind, (v) => {
        got.push(`${kind}: ${kind === "resync" || kind === "error" || kind === "reconnect" ? error(v) : body(v)}`);
        if (got.length >= n) {
          clearTimeout(t);
          done();
        }
      });
  });
}

async function main() {
  const etcd = new Etcd([host]);
  if (opts.wait) {
    const until = Date.now() + Number(opts.wait) * 1000;
    for (;;) {
      const [err] = await call(etcd, "get", "/");
      if (!err) break;
      if (Date.now() > until) throw err;
      await sleep(200);
    }
  }
  const [, b0] = await call(etcd, "set", "base", "0");
  base = b0.node.modifiedIndex;

  section("keys");
  await step("set a=1", etcd, "set", "a", "1");
  await step("set /a=2 (leading slash)", etcd, "set", "/a", "2");
  await step("get a", etcd, "get", "a");
  {
    const [err, , h] = await call(etcd, "get", "a");
    out("get a headers", err ? error(err) : headers(h));
  }
  await step("get missing", etcd, "get", "missing");
  await step("get a quorum", etcd, "get", "a", { quorum: true });
  await step("set empty value", etcd, "set", "e", "");
  await step("set utf8", etcd, "set", "ü/ö", "värde");
  await step("get utf8", etcd, "get", "ü/ö");
  await step("set with ttl 30", etcd, "set", "t", "x", { ttl: 30 });
  await step("get t", etcd, "get", "t");
  await step("set ttl refresh (no value)", etcd, "raw", "PUT", "v2/keys/t", null, { ttl: 40, refresh: true, prevExist: true });
  await step("set ttl bad", etcd, "set", "t2", "x", { ttl: "abc" });
  await step("set prevExist=false on existing", etcd, "set", "a", "3", { prevExist: false });
  await step("set prevExist=true on missing", etcd, "set", "nope", "3", { prevExist: true });
  await step("set prevExist=true on existing", etcd, "set", "a", "3", { prevExist: true });
  await step("set _hidden", etcd, "set", "_hidden", "h");
  await step("set dir/x", etcd, "set", "dir/x", "1");
  await step("set dir/y/z", etcd, "set", "dir/y/z", "2");
  await step("get dir", etcd, "get", "dir");
  await step("get dir recursive sorted", etcd, "get", "dir", { recursive: true, sorted: true });
  await step("get / (hidden not listed)", etcd, "get", "/", { sorted: true });
  await step("set on a dir", etcd, "set", "dir", "v");
  await step("set below a file", etcd, "set", "a/b", "v");
  await step("get below a file", etcd, "get", "a/b");

  section("dirs");
  await step("mkdir d", etcd, "mkdir", "d");
  await step("mkdir d again", etcd, "mkdir", "d");
  await step("mkdir with ttl", etcd, "mkdir", "dt", { ttl: 30 });
  await step("mkdir over a file", etcd, "mkdir", "a");
  await step("rmdir d", etcd, "rmdir", "d");
  await step("rmdir missing", etcd, "rmdir", "d");
  await step("rmdir a file", etcd, "rmdir", "a");
  await step("rmdir non-empty", etcd, "rmdir", "dir");
  await step("del dir (no recursive)", etcd, "del", "dir");
  await step("del dir recursive", etcd, "del", "dir", { recursive: true });
  await step("del missing", etcd, "del", "dir");
  await step("del root", etcd, "del", "/", { recursive: true });

  section("in-order keys");
  await step("create q 1", etcd, "create", "q", "one");
  await step("create q 2", etcd, "create", "q", "two");
  await step("post q ttl", etcd, "post", "q", "three", { ttl: 30 });
  await step("get q sorted recursive", etcd, "get", "q", { sorted: true, recursive: true });
  await step("create below a file", etcd, "create", "a", "x");

  section("compare and swap / delete");
  await step("set cas=3", etcd, "set", "cas", "v3");
  await step("CAS cas v3->v4", etcd, "compareAndSwap", "cas", "v4", "v3");
  await step("CAS cas v3->v5 (fails)", etcd, "compareAndSwap", "cas", "v5", "v3");
  await step("CAS missing", etcd, "compareAndSwap", "nope", "v5", "v3");
  {
    const [, g] = await call(etcd, "get", "cas");
    await step("CAS cas prevIndex ok", etcd, "set", "cas", "v6", { prevIndex: g.node.modifiedIndex });
    await step("CAS cas prevIndex stale", etcd, "set", "cas", "v7", { prevIndex: g.node.modifiedIndex });
    await step("CAS cas prevIndex and prevValue", etcd, "compareAndSwap", "cas", "v8", "v6", { prevIndex: g.node.modifiedIndex + 1 });
  }
  await step("CAS cas prevIndex 0", etcd, "set", "cas", "v7", { prevIndex: 0 });
  await step("CAS on a dir", etcd, "compareAndSwap", "q", "x", "y");
  await step("CAD cas wrong", etcd, "compareAndDelete", "cas", "nope");
  await step("CAD cas right", etcd, "compareAndDelete", "cas", "v7");
  await step("CAD missing", etcd, "compareAndDelete", "cas", "v7");
  await step("set c", etcd, "set", "c", "1").then(async () => {
    const [, g] = await call(etcd, "get", "c");
    await step("CAD prevIndex stale", etcd, "del", "c", { prevIndex: g.node.modifiedIndex - 1 });
    await step("CAD prevIndex ok", etcd, "del", "c", { prevIndex: g.node.modifiedIndex });
  });

  section("watch");
  {
    const p = call(etcd, "watch", "w");
    await sleep(200);
    await call(etcd, "set", "w", "1");
    const [err, b] = await p;
    out("watch w, then set", err ? error(err) : body(b));
  }
  {
    const p = call(etcd, "watch", "wd", { recursive: true });
    await sleep(200);
    await call(etcd, "set", "wd/a/b", "1");
    const [err, b] = await p;
    out("watch wd recursive, then set wd/a/b", err ? error(err) : body(b));
  }
  {
    const [, s] = await call(etcd, "set", "wi", "1");
    await call(etcd, "set", "wi", "2");
    await step("watchIndex wi past", etcd, "watchIndex", "wi", s.node.modifiedIndex);
    await step("watchIndex wi past+1", etcd, "watchIndex", "wi", s.node.modifiedIndex + 1);
  }
  {
    const w = etcd.watcher("wk");
    const got = events(w, 5, ["change", "set", "delete", "compareAndSwap"]);
    await sleep(200);
    await call(etcd, "set", "wk", "1");
    await sleep(100);
    await call(etcd, "compareAndSwap", "wk", "2", "1");
    await sleep(100);
    await call(etcd, "del", "wk");
    out("watcher wk: set, CAS, delete", await got);
    w.stop();
  }
  {
    const w = etcd.watcher("wr", null, { recursive: true });
    const got = events(w, 3, ["create", "update", "set"]);
    await sleep(200);
    await call(etcd, "create", "wr/q", "1");
    await sleep(100);
    await call(etcd, "set", "wr/x", "1", { prevExist: false });
    await sleep(100);
    await call(etcd, "set", "wr/x", "2", { prevExist: true });
    out("watcher wr recursive: create (POST), create, update", await got);
    w.stop();
  }
  {
    const w = etcd.watcher("ex");
    const got = events(w, 2, ["set", "expire"], 8000);
    await sleep(200);
    await call(etcd, "set", "ex", "1", { ttl: 1 });
    out("watcher ex: set ttl 1, expire", await got);
    await step("get ex after expiry", etcd, "get", "ex");
    w.stop();
  }
  {
    // 1000 events later, the index the watcher asks for has been cleared from the
    // history: the server answers 401 and the watcher resyncs from the index it gave.
    const [, s] = await call(etcd, "set", "old", "1");
    for (let i = 0; i < 1010; i++) await call(etcd, "set", "filler", String(i));
    const [err] = await call(etcd, "watchIndex", "old", s.node.modifiedIndex);
    out("watchIndex cleared", err ? error(err) : "no error");
    const w = etcd.watcher("old", s.node.modifiedIndex);
    const got = events(w, 2, ["resync", "set"]);
    await sleep(300);
    await call(etcd, "set", "old", "2");
    out("watcher from cleared index: resync, then set", await got);
    w.stop();
  }
  {
    const w = etcd.watcher("st");
    const stopped = new Promise((r) => w.on("stop", r));
    w.stop();
    out("watcher stop", await stopped);
  }

  section("cluster");
  {
    const [err, b] = await call(etcd, "version");
    out("version", err ? error(err) : `server=${b.etcdserver} cluster=${b.etcdcluster}`);
  }
  {
    const [err, b] = await call(etcd, "machines");
    out("machines", err ? error(err) : body(b));
  }
  {
    const [err, b] = await call(etcd, "leader");
    out("leader", err ? error(err) : JSON.stringify(b));
  }
  {
    const [err, b] = await call(etcd, "leaderStats");
    out("leaderStats", err ? error(err) : `leader=${typeof b.leader} followers=${JSON.stringify(b.followers)}`);
  }
  {
    const [err, b] = await call(etcd, "selfStats");
    out("selfStats", err ? error(err) : `state=${b.state} keys=${Object.keys(b).sort().join(",")}`);
  }
  out("getHosts", etcd.getHosts().map((h) => h.replace(/:\d+$/, ":PORT")).join(","));

  section("auth");
  {
    const base2 = `http://${host}/v2/auth`;
    const req = (method, path, body, user) =>
      fetch(`${base2}${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { "content-type": "application/json", ...(user ? { authorization: `Basic ${Buffer.from(user).toString("base64")}` } : {}) } }).then((r) => r.status);
    out("setup: root, alice (app/*), enable, guest revoked", [
      await req("PUT", "/users/root", { user: "root", password: "rootpw" }),
      await req("PUT", "/roles/app", { role: "app", permissions: { kv: { read: ["/app/*"], write: ["/app/*"] } } }),
      await req("PUT", "/users/alice", { user: "alice", password: "pw", roles: ["app"] }),
      await req("PUT", "/enable"),
      await req("PUT", "/roles/guest", { role: "guest", revoke: { kv: { read: ["/*"], write: ["/*"] } } }, "root:rootpw"),
    ].join(","));
    const alice = new Etcd([host], { auth: { user: "alice", pass: "pw" } });
    await step("alice set app/x", alice, "set", "app/x", "1");
    await step("alice get app/x", alice, "get", "app/x");
    await step("alice set outside", alice, "set", "other", "1");
    await step("alice get outside", alice, "get", "base");
    await step("alice mkdir app/d", alice, "mkdir", "app/d");
    await step("alice watch outside", alice, "watch", "base", { waitIndex: 1 });
    const wrong = new Etcd([host], { auth: { user: "alice", pass: "bad" } });
    await step("wrong password get app/x", wrong, "get", "app/x");
    await step("anonymous get app/x", etcd, "get", "app/x");
    await step("anonymous set", etcd, "set", "app/y", "1");
    const root = new Etcd([host], { auth: { user: "root", pass: "rootpw" } });
    await step("root get outside", root, "get", "base");
    out("disable auth", String(await req("DELETE", "/enable", undefined, "root:rootpw")));
    await step("anonymous get app/x after disable", etcd, "get", "app/x");
  }

  section("failover");
  {
    // The first host refuses connections: the client tries the next one.
    const two = new Etcd(["127.0.0.1:1", host]);
    const [err, b] = await call(two, "get", "base");
    out("dead host first, then ours", err ? error(err) : body(b));
    const none = new Etcd(["127.0.0.1:1"]);
    const [err2] = await call(none, "get", "base", { maxRetries: 0 });
    out("only a dead host", err2 ? error(err2) : "no error");
  }
}

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
