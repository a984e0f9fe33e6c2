// A removed member's id against one that never existed, on every membership API: the v2
// members API (DELETE 410 Gone "Member permanently removed", PUT 500, as etcd 3.4's handler
// falls through for it), the v3 gateway and gRPC (NotFound, as etcd maps ErrIDRemoved), and
// the v2 indexes a removal spends (two: etcd deletes the member's record and records the id).
// Side by side with etcd 3.4 when it is installed; then kvctl keeps the removed id across a
// restart from a snapshot that holds the removal.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { grpcUnary, installed, startGrpcServer, waitGrpcReady, type GrpcTestServer } from "../helpers/grpc.ts";
import { startServer } from "../helpers/server.ts";
import { agent, http, until } from "../helpers/http.ts";

after(() => agent.destroy());

const haveEtcd = installed("etcd");

/** A protobuf varint. */
function varint(n: bigint): number[] {
  const out: number[] = [];
  while (n >= 0x80n) {
    out.push(Number(n & 0x7fn) | 0x80);
    n >>= 7n;
  }
  out.push(Number(n));
  return out;
}

/** MemberRemoveRequest / MemberPromoteRequest {ID = 1}; MemberUpdateRequest adds peerURLs = 2. */
function memberMessage(id: bigint, peerUrl?: string): number[] {
  const url = peerUrl === undefined ? [] : [0x12, peerUrl.length, ...Buffer.from(peerUrl)];
  return [0x08, ...varint(id), ...url];
}

async function v2Index(url: string): Promise<number> {
  const h = (await http("GET", `${url}/v2/keys/`)).headers;
  return Number(h["x-kv-index"] ?? h["x-etcd-index"]);
}

async function gateway(url: string, path: string, body: unknown): Promise<[number, unknown]> {
  const res = await fetch(`${url}/v3/cluster/member/${path}`, { method: "POST", body: JSON.stringify(body) });
  return [res.status, await res.json()];
}

async function v2Members(url: string, method: "DELETE" | "PUT", hex: string): Promise<[number, string]> {
  const init = method === "PUT" ? { body: JSON.stringify({ peerURLs: ["http://127.0.0.1:1"] }), headers: { "content-type": "application/json" } } : {};
  const res = await fetch(`${url}/v2/members/${hex}`, { method, ...init });
  return [res.status, await res.text()];
}

/** Adds a learner (it never starts, and needs no quorum) and removes it: the removed id and the v2 indexes spent. */
async function addAndRemoveLearner(url: string): Promise<{ id: bigint; spent: number[] }> {
  const before = await v2Index(url);
  const [addStatus, added] = await gateway(url, "add", { peerURLs: ["http://127.0.0.1:2"], isLearner: true });
  assert.equal(addStatus, 200, JSON.stringify(added));
  const id = BigInt((added as { member: { ID: string } }).member.ID);
  const afterAdd = await v2Index(url);
  const [removeStatus, removed] = await gateway(url, "remove", { ID: id.toString() });
  assert.equal(removeStatus, 200, JSON.stringify(removed));
  return { id, spent: [afterAdd - before, (await v2Index(url)) - afterAdd] };
}

/** Every API's answer for `id`. */
async function answersFor(s: GrpcTestServer, id: bigint): Promise<Record<string, unknown>> {
  const hex = id.toString(16);
  const grpc = async (method: string, msg: number[]): Promise<string> => {
    const r = await grpcUnary(s.endpoint, `/etcdserverpb.Cluster/${method}`, msg);
    return `${r.status} ${r.message}`;
  };
  return {
    v2Delete: await v2Members(s.url, "DELETE", hex),
    v2Put: await v2Members(s.url, "PUT", hex),
    gatewayRemove: await gateway(s.url, "remove", { ID: id.toString() }),
    gatewayUpdate: await gateway(s.url, "update", { ID: id.toString(), peerURLs: ["http://127.0.0.1:3"] }),
    gatewayPromote: await gateway(s.url, "promote", { ID: id.toString() }),
    grpcRemove: await grpc("MemberRemove", memberMessage(id)),
    grpcUpdate: await grpc("MemberUpdate", memberMessage(id, "http://127.0.0.1:3")),
    grpcPromote: await grpc("MemberPromote", memberMessage(id)),
  };
}

test("a removed member's id is answered as etcd 3.4 answers it, unlike an id that never existed", async () => {
  const kinds: Array<"kvctl" | "etcd"> = haveEtcd ? ["kvctl", "etcd"] : ["kvctl"];
  const servers = await Promise.all(kinds.map((k) => startGrpcServer(k, ["--enable-v2"])));
  after(() => Promise.all(servers.map((s) => s.stop())));
  await Promise.all(servers.map((s) => waitGrpcReady(s)));
  const seen = await Promise.all(
    servers.map(async (s) => {
      const { id, spent } = await addAndRemoveLearner(s.url);
      const before = await v2Index(s.url);
      const removed = await answersFor(s, id);
      const unknown = await answersFor(s, 0x1234abcdn);
      // The id in the texts differs per server: named by a symbol.
      const text = JSON.stringify({ removed, unknown }).replaceAll(id.toString(16), "<removed>");
      return { spent, answers: JSON.parse(text) as unknown, refusedSpent: (await v2Index(s.url)) - before };
    }),
  );
  const notFound = { error: "etcdserver: member not found", message: "etcdserver: member not found", code: 5 };
  const internal = '{"message":"Internal Server Error"}';
  // etcd maps a removed id to "member not found" on the v3 APIs, as an unknown one.
  const grpcNotFound = "5 etcdserver: member not found";
  const v3NotFound = {
    gatewayRemove: [404, notFound],
    gatewayUpdate: [404, notFound],
    gatewayPromote: [404, notFound],
    grpcRemove: grpcNotFound,
    grpcUpdate: grpcNotFound,
    grpcPromote: grpcNotFound,
  };
  assert.deepEqual(seen[0], {
    spent: [1, 2],
    answers: {
      removed: { v2Delete: [410, '{"message":"Member permanently removed: <removed>"}'], v2Put: [500, internal], ...v3NotFound },
      unknown: { v2Delete: [404, '{"message":"No such member: 1234abcd"}'], v2Put: [404, '{"message":"No such member: 1234abcd"}'], ...v3NotFound },
    },
    refusedSpent: 0,
  });
  if (seen[1] !== undefined) assert.deepEqual(seen[1], seen[0], "etcd 3.4 answers the same");
});

test("a removed id stays removed across a restart from a snapshot that holds the removal", async () => {
  const srv = await startServer({ flags: ["--snapshot-count", "5"] });
  after(() => srv.stop());
  const { id } = await addAndRemoveLearner(srv.url);
  // Writes past --snapshot-count: the removal is in a snapshot, and the WAL before it dropped from replay.
  for (let i = 0; i < 12; i++) assert.equal((await http("PUT", `${srv.url}/v2/keys/fill/k${i}`, { value: "v" })).status, 201);
  await srv.restart();
  await until(async () => (await http("GET", `${srv.url}/v2/keys/fill/k0?quorum=true`)).status === 200, 10_000, "the restarted member to serve");
  assert.deepEqual(await v2Members(srv.url, "DELETE", id.toString(16)), [410, `{"message":"Member permanently removed: ${id.toString(16)}"}`]);
  assert.deepEqual(await gateway(srv.url, "remove", { ID: id.toString() }), [404, { error: "etcdserver: member not found", message: "etcdserver: member not found", code: 5 }]);
});

/** A request on the peer port's Raft paths as member `from` would make it, to member `to` of cluster `clusterId`. */
async function peerPost(peerUrl: string, path: string, ids: { from: string; to: string; clusterId: string }): Promise<[number, string]> {
  const res = await fetch(`${peerUrl}${path}`, {
    method: "POST",
    headers: { "X-Kv-Cluster-Id": ids.clusterId, "X-Server-From": ids.from, "X-Raft-To": ids.to },
    body: new Uint8Array(0),
  });
  return [res.status, await res.text()];
}

/** The snapshot index a restart started from, from its "restarted member" log line. */
function restartedFromSnapshot(logs: string): number {
  const line = logs.split("\n").filter((l) => l.includes('"restarted member"')).pop();
  assert.ok(line !== undefined, "the restart logged its start");
  return (JSON.parse(line) as { snapshotIndex: number }).snapshotIndex;
}

/** The indexes of the snapshots the member logged as saved. */
function savedSnapshots(logs: string): number[] {
  return logs
    .split("\n")
    .filter((l) => l.includes('"saved snapshot"'))
    .map((l) => (JSON.parse(l) as { index: number }).index);
}

for (const from of ["wal", "snapshot"] as const) {
  test(`a removed member's peer requests are answered 410 Gone after a restart, its removal ${from === "wal" ? "replayed from the WAL" : "in the snapshot"}`, async () => {
    const srv = await startServer({ flags: from === "snapshot" ? ["--snapshot-count", "5"] : [] });
    after(() => srv.stop());
    const res = await http("GET", `${srv.url}/v2/members`);
    const clusterId = String(res.headers["x-kv-cluster-id"] ?? res.headers["x-etcd-cluster-id"]);
    const self = (JSON.parse(res.body) as { members: Array<{ id: string }> }).members[0]!.id;
    const { id } = await addAndRemoveLearner(srv.url);
    const removedAt = Number((await http("GET", `${srv.url}/v2/keys/`)).headers["x-raft-index"]);
    if (from === "snapshot") {
      // Writes past --snapshot-count: the removal is in a snapshot, and the WAL before it dropped from replay.
      for (let i = 0; i < 12; i++) assert.equal((await http("PUT", `${srv.url}/v2/keys/fill/k${i}`, { value: "v" })).status, 201);
      // Snapshots are made in the background: a stop before one holding the removal is saved restarts from the older one.
      await until(async () => savedSnapshots(srv.logs()).some((index) => index >= removedAt), 10_000, `a snapshot at or after the removal at ${removedAt}`);
    }
    const gone = [410, "the member has been permanently removed from the cluster\n"];
    const asRemoved = { from: id.toString(16), to: self, clusterId };
    assert.deepEqual(await peerPost(srv.peerUrl, "/raft", asRemoved), gone, "before the restart");
    await srv.restart();
    await until(async () => (await http("GET", `${srv.url}/v2/keys/?quorum=true`)).status === 200, 10_000, "the restarted member to serve");
    const snapshotIndex = restartedFromSnapshot(srv.logs());
    if (from === "snapshot") assert.ok(snapshotIndex >= removedAt, `restarted from a snapshot at ${snapshotIndex}, after the removal at ${removedAt}`);
    else assert.ok(snapshotIndex < removedAt, `restarted from a snapshot at ${snapshotIndex}, before the removal at ${removedAt}`);
    assert.deepEqual(await peerPost(srv.peerUrl, "/raft", asRemoved), gone);
    assert.deepEqual(await peerPost(srv.peerUrl, "/raft/snapshot", asRemoved), gone);
    // An id that never was a member is not told it was removed.
    const [status] = await peerPost(srv.peerUrl, "/raft", { ...asRemoved, from: "1234abcd" });
    assert.notEqual(status, 410);
  });
}
