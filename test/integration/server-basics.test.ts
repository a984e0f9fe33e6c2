// One member end to end: snapshots and restart, quorum reads, headers, bad input.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { connect } from "node:net";
import { startServer } from "../helpers/server.ts";
import { agent, http, json, until } from "../helpers/http.ts";

after(() => agent.destroy());

const b64 = (s: string): string => Buffer.from(s).toString("base64");
async function v3(url: string, path: string, body: object): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body) });
  assert.equal(res.status, 200, path);
  return (await res.json()) as Record<string, unknown>;
}

test("snapshots are taken every --snapshot-count entries and a restart recovers every key and index", async () => {
  const srv = await startServer({ flags: ["--snapshot-count", "50"] });
  after(() => srv.stop());
  const indexes = new Map<string, number>();
  for (let i = 0; i < 180; i++) {
    const r = await json<{ node: { modifiedIndex: number } }>("PUT", `${srv.url}/v2/keys/snap/k${i}`, { value: `v${i}` });
    indexes.set(`k${i}`, r.body.node.modifiedIndex);
    // v3 keys too, each written twice, so the snapshots hold both key spaces and history.
    if (i % 3 === 0) for (const round of [1, 2]) await v3(srv.url, "/v3/kv/put", { key: b64(`snap3/k${i}`), value: b64(`r${round}`) });
  }
  const v3Before = await v3(srv.url, "/v3/kv/range", { key: b64("snap3/"), range_end: b64("snap30") });
  const snaps = readdirSync(join(srv.dataDir, "member", "snap")).filter((f) => f.endsWith(".snap"));
  assert.ok(snaps.length >= 2, `expected snapshots, found ${snaps.join(",")}`);
  await srv.restart();
  const all = await json<{ node: { nodes: Array<{ key: string; value: string; modifiedIndex: number }> } }>("GET", `${srv.url}/v2/keys/snap?recursive=true`);
  assert.equal(all.body.node.nodes.length, 180);
  for (const n of all.body.node.nodes) {
    const k = n.key.slice("/snap/".length);
    assert.equal(n.modifiedIndex, indexes.get(k));
    assert.equal(n.value, `v${k.slice(1)}`);
  }
  // The v3 key space too: every key, its revisions and version, and the header revision.
  const v3After = await v3(srv.url, "/v3/kv/range", { key: b64("snap3/"), range_end: b64("snap30") });
  assert.deepEqual(v3After["kvs"], v3Before["kvs"]);
  assert.equal((v3After["header"] as { revision: string }).revision, (v3Before["header"] as { revision: string }).revision);
  assert.equal((v3Before["kvs"] as unknown[]).length, 60);
  // Writes after restart continue the index sequence.
  const next = await json<{ node: { modifiedIndex: number } }>("PUT", `${srv.url}/v2/keys/snap/after`, { value: "x" });
  assert.ok(next.body.node.modifiedIndex > Math.max(...indexes.values()));
});

test("a member spends v2 indexes as etcd 3.4: a fresh one's first key gets 4, a restart (from a snapshot) spends one", async () => {
  // etcd's v2 store holds the member (1), its published attributes (2) and the cluster
  // version its first leader records (3); a restart publishes again and records no version.
  const srv = await startServer({ flags: ["--snapshot-count", "5"] });
  after(() => srv.stop());
  const published = async (): Promise<boolean> => /"name":"[^"]+"/.test((await http("GET", `${srv.url}/v2/members`)).body);
  await until(published, 10_000, "the member's attributes");
  const first = await json<{ node: { modifiedIndex: number } }>("PUT", `${srv.url}/v2/keys/idx/first`, { value: "1" });
  assert.equal(first.body.node.modifiedIndex, 4);
  let last = 4;
  for (let i = 0; i < 10; i++) last = (await json<{ node: { modifiedIndex: number } }>("PUT", `${srv.url}/v2/keys/idx/k${i}`, { value: "v" })).body.node.modifiedIndex;
  assert.equal(last, 14);
  assert.ok(readdirSync(join(srv.dataDir, "member", "snap")).some((f) => f.endsWith(".snap")), "a snapshot holds the recorded version");
  await srv.restart();
  const index = async (): Promise<number> => {
    const h = (await http("GET", `${srv.url}/v2/keys/`)).headers;
    return Number(h["x-kv-index"] ?? h["x-etcd-index"]);
  };
  await until(async () => (await index()) > last, 10_000, "the attributes published again");
  const next = await json<{ node: { modifiedIndex: number } }>("PUT", `${srv.url}/v2/keys/idx/after`, { value: "x" });
  assert.equal(next.body.node.modifiedIndex, last + 2);
});

test("a quorum read sees the write acknowledged just before it, with every header", async () => {
  const srv = await startServer();
  after(() => srv.stop());
  for (let i = 0; i < 20; i++) {
    const w = await json<{ node: { modifiedIndex: number } }>("PUT", `${srv.url}/v2/keys/q/k`, { value: String(i) });
    const r = await json<{ node: { value: string; modifiedIndex: number } }>("GET", `${srv.url}/v2/keys/q/k?quorum=true`);
    assert.equal(r.body.node.value, String(i));
    assert.equal(r.body.node.modifiedIndex, w.body.node.modifiedIndex);
    for (const h of ["x-kv-index", "x-etcd-index", "x-raft-index", "x-raft-term", "x-kv-cluster-id", "x-etcd-cluster-id"]) {
      assert.ok(r.headers[h] !== undefined, `missing ${h}`);
    }
    assert.equal(r.headers["x-kv-index"], r.headers["x-etcd-index"]);
  }
});

test("a request line over 4096 bytes gets 414 and the connection stays usable", async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const port = Number(new URL(srv.url).port);
  const sock = connect(port, "127.0.0.1");
  let data = "";
  sock.on("data", (c: Buffer) => (data += c.toString()));
  const long = "x".repeat(5000);
  sock.write(`GET /v2/keys/${long} HTTP/1.1\r\nHost: a\r\n\r\nGET /version HTTP/1.1\r\nHost: a\r\n\r\n`);
  await until(() => data.includes("etcdserver"), 5000, "the answer to the request after the long one", () => data).finally(() => sock.destroy());
  assert.match(data, /^HTTP\/1\.1 414 /);
  assert.match(data, /"etcdserver":"3\.4/);
});

test("a target with a bad escape is Go's raw 400 for every method, OPTIONS included (no CORS, connection closed)", async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const port = Number(new URL(srv.url).port);
  for (const method of ["OPTIONS", "GET", "PUT"]) {
    const sock = connect(port, "127.0.0.1");
    let data = "";
    sock.on("data", (c: Buffer) => (data += c.toString()));
    const closed = new Promise<void>((r) => sock.once("close", () => r()));
    sock.write(`${method} /v2/keys/%zz HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n`);
    await closed;
    assert.equal(data, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request", method);
  }
});

test("hundreds of malformed requests get 4xx answers and change nothing", async () => {
  const srv = await startServer();
  after(() => srv.stop());
  await http("PUT", `${srv.url}/v2/keys/keep/a`, { value: "1" });
  const before = (await http("GET", `${srv.url}/v2/keys/?recursive=true&sorted=true`)).body;
  const bad: Array<[string, string, Record<string, string>?]> = [];
  const params = ["ttl=abc", "prevIndex=-1", "waitIndex=x", "recursive=maybe", "dir=2", "prevExist=yes", "refresh=true", "refresh=true&ttl=5&value=x", "prevValue=", "value=%zz", "a;b=c", "noValueOnSuccess=x", "sorted=yes", "quorum=nope", "stream=1x"];
  for (const p of params) for (const m of ["PUT", "POST", "DELETE", "GET"]) bad.push([m, `/v2/keys/keep/a?${p}`]);
  for (let i = 0; i < 200; i++) bad.push(["PUT", `/v2/keys/keep/a?ttl=${"9".repeat(i % 30 + 21)}`]);
  for (const m of ["PATCH", "PROPFIND", "TRACE"]) bad.push([m, "/v2/keys/keep/a"]);
  bad.push(["PUT", "/v2/keys/"], ["DELETE", "/v2/keys"], ["PUT", "/v2/keys/keep/a/b", { value: "below a file" }], ["POST", "/v2/members", { x: "y" }]);
  let n = 0;
  for (const [m, path, form] of bad) {
    const r = await http(m, `${srv.url}${path}`, form);
    assert.ok(r.status >= 400 && r.status < 500, `${m} ${path} -> ${r.status} ${r.body}`);
    n++;
  }
  assert.ok(n > 250);
  const after_ = (await http("GET", `${srv.url}/v2/keys/?recursive=true&sorted=true`)).body;
  assert.equal(after_, before);
  assert.equal((await http("GET", `${srv.url}/health`)).status, 200);
});
