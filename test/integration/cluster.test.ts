// Three real members on loopback: writes through any member, linearizable reads on every
// member, leader failure and recovery, graceful leader hand-off, membership changes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startCluster, healthy, type ClusterMember, type TestCluster } from "../helpers/cluster.ts";
import { agent, http, json, until } from "../helpers/http.ts";
import { eventually } from "../../src/until.test-helper.ts";

after(() => agent.destroy());

let cluster: TestCluster;
before(async () => {
  cluster = await startCluster(3);
});
after(() => cluster.stop());

test("a 3-member cluster elects one leader and serves writes from every member", async () => {
  await until(async () => (await cluster.leader()) !== undefined, 10_000, "a leader");
  for (const [i, m] of cluster.members.entries()) {
    const w = await json<{ node: { modifiedIndex: number } }>("PUT", `${m.clientUrl}/v2/keys/c/k${i}`, { value: m.name });
    assert.equal(w.status, 201);
    for (const other of cluster.members) {
      const r = await json<{ node: { value: string } }>("GET", `${other.clientUrl}/v2/keys/c/k${i}?quorum=true`);
      assert.equal(r.body.node.value, m.name, `${other.name} reads ${m.name}'s write`);
    }
  }
  const members = await json<{ members: Array<{ name: string; clientURLs: string[] }> }>("GET", `${cluster.members[0]!.clientUrl}/v2/members`);
  assert.deepEqual(members.body.members.map((m) => m.name).sort(), ["m0", "m1", "m2"]);
  const leader = (await cluster.leader())!;
  const ls = await json<{ followers: Record<string, { counts: { success: number } }> }>("GET", `${leader.clientUrl}/v2/stats/leader`);
  assert.equal(Object.keys(ls.body.followers).length, 2);
  const follower = cluster.members.find((m) => m !== leader)!;
  assert.equal((await http("GET", `${follower.clientUrl}/v2/stats/leader`)).status, 403);
});

test("killing the leader elects a new one in a higher term, and the old one catches up on restart", async () => {
  const old = (await cluster.leader())!;
  const before = await http("GET", `${old.clientUrl}/v2/keys/c/k0`);
  const term0 = Number(before.headers["x-raft-term"]);
  await cluster.kill(old, "SIGKILL");
  const rest = cluster.members.filter((m) => m !== old);
  await until(async () => {
    const l = await cluster.leader();
    return l !== undefined && l !== old;
  }, 10_000, "a new leader");
  const w = await http("PUT", `${rest[0]!.clientUrl}/v2/keys/c/after`, { value: "x" });
  assert.equal(w.status, 201);
  assert.ok(Number(w.headers["x-raft-term"]) > term0, "the term rose with the election");
  await cluster.start(old);
  assert.ok(await healthy(old.clientUrl, 20_000));
  await until(async () => (await http("GET", `${old.clientUrl}/v2/keys/c/after`)).status === 200, 10_000, "the restarted member to catch up");
});

test("SIGTERM on the leader hands leadership over before it stops", async () => {
  const old = (await cluster.leader())!;
  await cluster.kill(old, "SIGTERM");
  assert.match(old.log.join(""), /transferring leadership/);
  await until(async () => (await cluster.leader()) !== undefined, 5000, "a leader after the hand-off");
  await cluster.start(old);
  assert.ok(await healthy(old.clientUrl, 20_000));
});

test("a member added with the members API joins with --initial-cluster-state existing, and can be removed", async () => {
  const m0 = cluster.members[0]!;
  const d = await cluster.spare("m3");
  const add = await json<{ id: string; peerURLs: string[] }>("POST", `${m0.clientUrl}/v2/members`);
  assert.equal(add.status, 415);
  // --strict-reconfig-check (on by default, as in etcd) refuses a member add until this
  // member's links to every voter have been up for 5 s (the tests before restarted members),
  // and it runs before the peer URLs are compared: a URL a running member has is a 409 then.
  const post = (peerUrl: string): Promise<Response> =>
    fetch(`${m0.clientUrl}/v2/members`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ peerURLs: [peerUrl] }) });
  const dup = await eventually(
    async () => {
      const r = await post(cluster.members[1]!.peerUrl);
      if (r.status !== 500) return r;
      assert.deepEqual(await r.json(), { message: "Internal Server Error" });
      return undefined;
    },
    "the member add past --strict-reconfig-check (500 until then)",
    15_000,
    { intervalMs: 250 },
  );
  assert.equal(dup.status, 409);
  await dup.arrayBuffer();
  const res = await post(d.peerUrl);
  assert.equal(res.status, 201);
  const added = (await res.json()) as { id: string };
  await cluster.start(d, { state: "existing", initialCluster: `${cluster.initialCluster()},m3=${d.peerUrl}` });
  assert.ok(await healthy(d.clientUrl, 20_000), d.log.join("").slice(-2000));
  await until(async () => (await http("GET", `${d.clientUrl}/v2/keys/c/after?quorum=true`)).status === 200, 10_000, "the new member to serve");
  const list = await json<{ members: Array<{ name: string }> }>("GET", `${d.clientUrl}/v2/members`);
  await until(async () => (await json<{ members: Array<{ name: string }> }>("GET", `${m0.clientUrl}/v2/members`)).body.members.some((m) => m.name === "m3"), 10_000, "m3 to publish its name");
  assert.equal(list.body.members.length, 4);
  // It applied its own add as the others did (it knew itself from the cluster before the
  // entry came): the same v2 index, and it is in its own Raft configuration, so it can lead.
  const w = await http("PUT", `${m0.clientUrl}/v2/keys/c/joined`, { value: "1" });
  assert.equal(w.status, 201);
  const index = w.headers["x-kv-index"];
  await until(async () => (await http("GET", `${d.clientUrl}/v2/keys/c/joined`)).headers["x-kv-index"] === index, 10_000, `the joined member at v2 index ${String(index)}`);
  const decimal = (hexId: string): string => BigInt(`0x${hexId}`).toString();
  const leader = await cluster.leader();
  assert.ok(leader !== undefined);
  const moved = await fetch(`${leader.clientUrl}/v3/maintenance/transfer-leadership`, { method: "POST", body: JSON.stringify({ targetID: decimal(added.id) }) });
  assert.equal(moved.status, 200, await moved.text());
  await until(async () => ((await json<{ state: string }>("GET", `${d.clientUrl}/v2/stats/self`)).body.state === "StateLeader"), 10_000, "the joined member to lead");
  const m0Id = (await json<{ members: Array<{ id: string; name: string }> }>("GET", `${d.clientUrl}/v2/members`)).body.members.find((m) => m.name === m0.name)!.id;
  const back = await fetch(`${d.clientUrl}/v3/maintenance/transfer-leadership`, { method: "POST", body: JSON.stringify({ targetID: decimal(m0Id) }) });
  assert.equal(back.status, 200, await back.text());
  await until(async () => ((await json<{ state: string }>("GET", `${m0.clientUrl}/v2/stats/self`)).body.state === "StateLeader"), 10_000, "m0 to lead again");
  const del = await http("DELETE", `${m0.clientUrl}/v2/members/${added.id}`);
  assert.equal(del.status, 204);
  await until(() => d.process!.exitCode !== null, 10_000, "the removed member to stop");
  const after4 = await json<{ members: unknown[] }>("GET", `${m0.clientUrl}/v2/members`);
  assert.equal(after4.body.members.length, 3);
});

test("a member without a quorum answers writes with etcd's raft error after a bounded wait, and recovers", async () => {
  const [a, b, c] = cluster.members as [ClusterMember, ClusterMember, ClusterMember];
  await cluster.kill(b, "SIGKILL");
  await cluster.kill(c, "SIGKILL");
  const t0 = Date.now();
  const r = await http("PUT", `${a.clientUrl}/v2/keys/c/noquorum`, { value: "x" });
  const waited = Date.now() - t0;
  assert.equal(r.status, 500);
  const body = JSON.parse(r.body) as { errorCode: number; message: string; cause: string };
  assert.equal(body.errorCode, 300);
  assert.equal(body.message, "Raft Internal Error");
  assert.match(body.cause, /request timed out/);
  // 5 s + 2 election timeouts (500 ms here), as etcd bounds a request: never a hang.
  assert.ok(waited < 8000, `answered after ${waited} ms`);
  assert.equal((await http("GET", `${a.clientUrl}/health`)).status, 503);
  await cluster.start(b);
  await cluster.start(c);
  assert.ok(await healthy(b.clientUrl, 20_000));
  assert.ok(await healthy(c.clientUrl, 20_000));
  assert.equal((await http("PUT", `${a.clientUrl}/v2/keys/c/quorum-back`, { value: "y" })).status, 201);
});
