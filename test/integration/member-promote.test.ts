// Member promote on a real 3-member `kvctl serve` cluster and a learner, as etcd 3.4.23
// answers it: the leader alone decides, from its Raft progress, whether the learner caught
// up (its log within 10 % of the leader's); a follower forwards the request to the leader's
// peer port and returns its answer.
// (a) a learner added and never started is refused: over gRPC (etcdctl) and the gateway,
//     sent to the leader and to a follower, with etcd's code and text; nothing changes, and
//     the leader counts each refusal in etcd_server_learner_promote_failures, the followers none;
// (b) once the learner started and caught up, a promotion sent to a follower is accepted
//     and answered with the members as the leader applied it (a voter); the leader counts
//     one success; promoting it again is refused as a voter's promotion, on both paths.
// MoveLeader, the one Maintenance/Cluster answer whose header differed from etcd 3.4.23's
// (compared over gRPC with etcdctl -w json and over the gateway), answers {} on both.
// A caller refused by auth is counted by the member it asked, as etcd's PromoteMember counts it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startCluster, type ClusterMember, type TestCluster } from "../helpers/cluster.ts";
import { etcdctl, errorLine, installed } from "../helpers/grpc.ts";
import { eventually } from "../../src/until.test-helper.ts";

const NOT_READY = "etcdserver: can only promote a learner member which is in sync with leader";
const haveEtcdctl = installed("etcdctl");

let cluster: TestCluster;
before(async () => {
  cluster = await startCluster(3);
});
after(() => cluster?.stop());

const endpoint = (m: ClusterMember): string => m.clientUrl.replace("http://", "");

async function gateway(m: ClusterMember, path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${m.clientUrl}/v3/${path}`, { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

interface ListedMember {
  ID: string;
  name?: string;
  isLearner?: boolean;
}

async function members(m: ClusterMember): Promise<ListedMember[]> {
  const r = await gateway(m, "cluster/member/list", {});
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body["members"] as ListedMember[];
}

/** etcd_server_learner_promote_* series of a member's /metrics, name{labels} -> value. */
async function promoteSeries(m: ClusterMember): Promise<Record<string, number>> {
  const text = await (await fetch(`${m.clientUrl}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    const hit = /^(etcd_server_learner_promote_.+) (\S+)$/.exec(line);
    if (hit !== null) out[hit[1]!] = Number(hit[2]);
  }
  return out;
}

/** The v3 status of a member: its applied index. */
async function appliedIndex(m: ClusterMember): Promise<number> {
  const r = await gateway(m, "maintenance/status", {});
  return Number(r.body["raftAppliedIndex"] ?? 0);
}

test("a learner is promoted only once in sync with the leader, whichever member takes the request", async () => {
  const leader = await eventually(() => cluster.leader(), "a leader", 10_000);
  const followers = cluster.members.filter((m) => m !== leader);
  const follower = followers[0]!;
  const learner = await cluster.spare("learner");
  const added = await gateway(leader, "cluster/member/add", { peerURLs: [learner.peerUrl], isLearner: true });
  assert.equal(added.status, 200, JSON.stringify(added.body));
  const id = (added.body["member"] as { ID: string }).ID;
  const hex = BigInt(id).toString(16);

  // (a) Never started: refused on every path, the same way.
  const refusal = { error: NOT_READY, message: NOT_READY, code: 9 };
  assert.deepEqual(await gateway(leader, "cluster/member/promote", { ID: id }), { status: 412, body: refusal });
  assert.deepEqual(await gateway(follower, "cluster/member/promote", { ID: id }), { status: 412, body: refusal });
  let refused = 2;
  if (haveEtcdctl) {
    for (const m of [leader, follower]) {
      const r = await etcdctl(endpoint(m), ["member", "promote", hex], { timeoutMs: 20_000 });
      assert.equal(r.code, 1, r.stdout);
      assert.equal(errorLine(r.stderr), `Error: ${NOT_READY}`);
      refused++;
    }
  }
  assert.equal((await members(follower)).find((x) => x.ID === id)?.isLearner, true);
  const reason = `etcd_server_learner_promote_failures{Reason="${NOT_READY}"}`;
  assert.deepEqual(await promoteSeries(leader), { [reason]: refused, etcd_server_learner_promote_successes: 0 });
  for (const f of followers) assert.deepEqual(await promoteSeries(f), { etcd_server_learner_promote_successes: 0 }, `${f.name} counts nothing`);

  // (b) Started and caught up: its applied index reaches the leader's as it was after a write.
  await cluster.start(learner, { state: "existing", initialCluster: `${cluster.initialCluster()},${learner.name}=${learner.peerUrl}` });
  assert.equal((await gateway(leader, "kv/put", { key: Buffer.from("after-add").toString("base64"), value: "" })).status, 200);
  const target = await appliedIndex(leader);
  await eventually(async () => ((await appliedIndex(learner).catch(() => 0)) >= target ? true : undefined), "the learner to catch up", 20_000, { intervalMs: 100 });

  const promoted = await gateway(follower, "cluster/member/promote", { ID: id });
  assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
  // The follower answers with the members as the leader had them once applied: a voter already.
  const listed = (promoted.body["members"] as ListedMember[]).find((x) => x.ID === id);
  assert.ok(listed !== undefined, JSON.stringify(promoted.body));
  assert.equal(listed.isLearner, undefined);
  await eventually(async () => ((await members(follower)).find((x) => x.ID === id)?.isLearner === undefined ? true : undefined), "the follower to apply it", 5000);
  assert.equal((await promoteSeries(leader))["etcd_server_learner_promote_successes"], 1);
  for (const f of followers) assert.equal((await promoteSeries(f))["etcd_server_learner_promote_successes"], 0);

  // A voter is no learner: etcd's answer from the gateway, sent to a follower and to the leader.
  const voter = { error: "etcdserver: can only promote a learner member", message: "etcdserver: can only promote a learner member", code: 9 };
  assert.deepEqual(await gateway(follower, "cluster/member/promote", { ID: id }), { status: 412, body: voter });
  assert.deepEqual(await gateway(leader, "cluster/member/promote", { ID: id }), { status: 412, body: voter });
  if (haveEtcdctl) {
    const r = await etcdctl(endpoint(follower), ["member", "promote", hex], { timeoutMs: 20_000 });
    assert.deepEqual([r.code, errorLine(r.stderr)], [1, `Error: ${voter.message}`]);
  }
  // Both refused when applied, on the leader (etcd's text of ErrMemberNotLearner).
  const notLearner = `etcd_server_learner_promote_failures{Reason="membership: can only promote a learner member"}`;
  assert.equal((await promoteSeries(leader))[notLearner], haveEtcdctl ? 3 : 2);
});

test("MoveLeader answers an empty response over gRPC and the gateway, as etcd 3.4's", { skip: !haveEtcdctl && "etcdctl not installed" }, async () => {
  const idOf = async (m: ClusterMember): Promise<string> => (await members(m)).find((x) => x.name === m.name)!.ID;
  const leader = await eventually(() => cluster.leader(), "a leader", 10_000);
  const target = cluster.members.find((m) => m !== leader)!;
  const r = await etcdctl(endpoint(leader), ["move-leader", BigInt(await idOf(target)).toString(16), "-w", "json"], { timeoutMs: 20_000 });
  assert.deepEqual([r.code, r.stdout], [0, "{}\n"], r.stderr);
  await eventually(async () => ((await cluster.leader()) === target ? true : undefined), "the new leader", 10_000);
  assert.deepEqual(await gateway(target, "maintenance/transfer-leadership", { targetID: await idOf(leader) }), { status: 200, body: {} });
});

test("a caller refused before the promotion is counted where it asked, under etcd's auth error text", async () => {
  const leader = await eventually(() => cluster.leader(), "a leader", 10_000);
  const follower = cluster.members.find((m) => m !== leader)!;
  for (const [path, body] of [["auth/user/add", { name: "root", password: "pw" }], ["auth/user/grant", { user: "root", role: "root" }], ["auth/enable", {}]] as const) {
    const r = await gateway(leader, path, body);
    assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  }
  const before = await promoteSeries(follower);
  const anonymous = await gateway(follower, "cluster/member/promote", { ID: "1" });
  assert.deepEqual(anonymous, { status: 400, body: { error: "etcdserver: user name is empty", message: "etcdserver: user name is empty", code: 3 } });
  const res = await fetch(`${follower.clientUrl}/v3/cluster/member/promote`, { method: "POST", headers: { Authorization: "bogus" }, body: JSON.stringify({ ID: "1" }) });
  assert.deepEqual([res.status, await res.json()], [401, { error: "etcdserver: invalid auth token", message: "etcdserver: invalid auth token", code: 16 }]);
  assert.deepEqual(await promoteSeries(follower), {
    ...before,
    'etcd_server_learner_promote_failures{Reason="auth: invalid auth token"}': 1,
    'etcd_server_learner_promote_failures{Reason="auth: user name is empty"}': 1,
  });
});
