// "etcdserver: leader changed", kvctl and etcd 3.4 side by side: a linearizable read on a
// follower waits for its ReadIndex, which the leader, paused (SIGSTOP), never answers; the
// two others elect a new leader, and the read fails with code 14 (503 through the
// gateway), as etcd 3.4's linearizableReadLoop fails it. The client may retry it. A
// read-only txn whose ranges are all serializable makes no ReadIndex round (etcd's
// isTxnSerializable): the follower answers it from its own key space meanwhile.
import assert from "node:assert/strict";
import { test } from "node:test";
import { grpcUnary, installed, startGrpcCluster, type GrpcTestCluster, type GrpcTestMember } from "../helpers/grpc.ts";
import { until } from "../helpers/http.ts";

const FLAGS = ["--heartbeat-interval", "50", "--election-timeout", "500"];
const RANGE_K = [0x0a, 1, 0x6b]; // RangeRequest{key: "k"}

async function post(m: GrpcTestMember, path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${m.url}${path}`, { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** The member every member names as its leader, once all agree on one. */
async function leaderOf(c: GrpcTestCluster): Promise<GrpcTestMember> {
  let leader: GrpcTestMember | undefined;
  await until(
    async () => {
      try {
        const st = await Promise.all(c.members.map((m) => post(m, "/v3/maintenance/status", {})));
        const ids = st.map((s) => String((s.json["header"] as { member_id: string }).member_id));
        const leaders = new Set(st.map((s) => String(s.json["leader"])));
        leader = leaders.size === 1 ? c.members[ids.indexOf([...leaders][0]!)] : undefined;
      } catch {
        leader = undefined; // not serving yet
      }
      return leader !== undefined;
    },
    30_000,
    `${c.kind}: one leader that every member names`,
  );
  return leader!;
}

/** Pauses the leader, runs `read` on a follower (its read index goes unanswered), resumes the leader once it ended. */
async function withLeaderPaused<T>(c: GrpcTestCluster, read: (follower: GrpcTestMember) => Promise<T>): Promise<T> {
  const leader = await leaderOf(c);
  const follower = c.members.find((m) => m !== leader)!;
  leader.proc.child.kill("SIGSTOP");
  try {
    return await read(follower);
  } finally {
    leader.proc.child.kill("SIGCONT");
  }
}

for (const kind of installed("etcd") ? (["kvctl", "etcd"] as const) : (["kvctl"] as const)) {
  test(`${kind}: a linearizable read waiting for its read index when a new leader is elected fails with 'leader changed'`, { timeout: 90_000 }, async () => {
    const c = await startGrpcCluster(kind, 3, FLAGS);
    try {
      assert.equal((await post(await leaderOf(c), "/v3/kv/put", { key: "aw==", value: "dg==" })).status, 200);
      // One read a pause: reads that arrive while a round is in flight wait for the next
      // one, which a new leader does not fail.
      const gateway = await withLeaderPaused(c, (f) => post(f, "/v3/kv/range", { key: "aw==" }));
      assert.deepEqual(gateway, { status: 503, json: { error: "etcdserver: leader changed", message: "etcdserver: leader changed", code: 14 } });
      const grpc = await withLeaderPaused(c, (f) => grpcUnary(f.endpoint, "/etcdserverpb.KV/Range", RANGE_K));
      assert.deepEqual([grpc.status, grpc.message], ["14", "etcdserver: leader changed"]);
      const txn = await withLeaderPaused(c, (f) => post(f, "/v3/kv/txn", { success: [{ request_range: { key: "aw==" } }] }));
      assert.deepEqual([txn.status, txn.json["message"]], [503, "etcdserver: leader changed"]);
      // Once the members agree on the new leader, reads are served.
      const leader = await leaderOf(c);
      const again = await post(c.members.find((m) => m !== leader)!, "/v3/kv/range", { key: "aw==" });
      assert.equal(again.status, 200, JSON.stringify(again.json));
    } finally {
      await c.stop();
    }
  });

  test(`${kind}: a follower answers a read-only txn of serializable ranges while the leader is paused`, { timeout: 90_000 }, async () => {
    const c = await startGrpcCluster(kind, 3, FLAGS);
    try {
      assert.equal((await post(await leaderOf(c), "/v3/kv/put", { key: "aw==", value: "dg==" })).status, 200);
      const applied = async (m: GrpcTestMember) => (await post(m, "/v3/kv/range", { key: "aw==", serializable: true })).json["count"] === "1";
      await until(async () => (await Promise.all(c.members.map(applied))).every(Boolean), 10_000, `${kind}: the put on every member`);
      const serializable = { request_range: { key: "aw==", serializable: true } };
      const [txn, compareOnly] = await withLeaderPaused(c, async (f) => [
        await post(f, "/v3/kv/txn", { success: [serializable], failure: [serializable] }),
        await post(f, "/v3/kv/txn", { compare: [{ key: "aw==", target: "VERSION", result: "EQUAL", version: "1" }] }),
      ]);
      assert.equal(txn.status, 200, JSON.stringify(txn.json));
      const range = (txn.json["responses"] as { response_range: { kvs: { value: string }[] } }[])[0]!.response_range;
      assert.deepEqual([txn.json["succeeded"], range.kvs.map((kv) => kv.value)], [true, ["dg=="]]);
      assert.equal(compareOnly.status, 200, JSON.stringify(compareOnly.json));
      assert.equal(compareOnly.json["succeeded"], true);
    } finally {
      await c.stop();
    }
  });
}
