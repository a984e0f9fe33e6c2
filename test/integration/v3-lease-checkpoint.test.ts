// Lease checkpoints (--experimental-enable-lease-checkpoint) on three real members: the
// leader puts each lease's remaining TTL through the log, so after the leader is killed the
// new one resumes the lease from there instead of granting its full TTL again, which is
// what happens without the flag (etcd 3.4's default, beside it here). A keepalive clears
// the checkpoint; with -persist the remaining TTL also survives a restart of every member.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startCluster, healthy, type ClusterMember, type TestCluster } from "../helpers/cluster.ts";
import { gatewayPost, until } from "../helpers/http.ts";

const clusters: TestCluster[] = [];
after(async () => {
  for (const c of clusters) await c.stop();
});

const ELECTION_MS = 500;
const TTL = 20;
const CHECKPOINT_MS = 1000;
/** How often the leader looks for due checkpoints (lease-keeper.ts EXPIRY_CHECK_MS). */
const CHECK_MS = 100;
const timing = ["--heartbeat-interval", "50", "--election-timeout", String(ELECTION_MS)];

async function grant(m: ClusterMember, ttl: number): Promise<string> {
  return (await gatewayPost(m.clientUrl, "/v3/lease/grant", { TTL: ttl }))["ID"] as string;
}

async function timeToLive(m: ClusterMember, id: string): Promise<number> {
  return Number((await gatewayPost(m.clientUrl, "/v3/lease/timetolive", { ID: id }))["TTL"]);
}

/**
 * Waits until the lease's TTL, as the leader answers it (rounded up), is down to `most`
 * seconds; answers that TTL. Time passing is what the tests need, but read from the lease
 * itself: a fixed sleep sat on the rounding boundary.
 */
async function ttlAtMost(m: ClusterMember, id: string, most: number): Promise<number> {
  let ttl = Infinity;
  await until(async () => (ttl = await timeToLive(m, id)) <= most, (TTL - most + 5) * 1000, `the lease's TTL down to ${most} s`);
  return ttl;
}

/**
 * How much more than the clock's seconds left a new leader may give a checkpointed lease.
 * Its clock stands still from the last checkpoint the new leader applied until that leader
 * is promoted: at most an interval and a check before the kill, plus that checkpoint's own
 * trip through the log (another interval allowed for it on a loaded machine), plus
 * `sinceKillMs`, the kill to the answer (the election on a loaded machine can take more
 * than a second). The checkpoint is rounded up (1 s) and the promotion adds an election
 * timeout.
 */
function resumeSlackS(sinceKillMs: number): number {
  return (2 * CHECKPOINT_MS + CHECK_MS + sinceKillMs + 1000 + ELECTION_MS) / 1000;
}

/** The v3 backend commits a member has finished (each commit of applied writes counts once). */
async function backendCommits(m: ClusterMember): Promise<number> {
  const text = await (await fetch(`${m.clientUrl}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const count = /^etcd_disk_backend_commit_duration_seconds_count (\d+)/m.exec(text);
  assert.ok(count !== null, `${m.name} exposes its backend commits`);
  return Number(count[1]);
}

/**
 * Waits until `m` applied `key` and its database committed it: two commits finish after the
 * key is seen (one may have been under way already, without it; the next includes it).
 */
async function committedOn(m: ClusterMember, key: string): Promise<void> {
  const seen = async (): Promise<boolean> => ((await gatewayPost(m.clientUrl, "/v3/kv/range", { key: Buffer.from(key).toString("base64"), serializable: true }))["kvs"] as unknown[] | undefined)?.length === 1;
  await until(seen, 20_000, `${m.name} applied ${key}`);
  let last = await backendCommits(m);
  let changes = 0;
  await until(async () => {
    const now = await backendCommits(m);
    if (now > last) changes++;
    last = now;
    return changes >= 2;
  }, 20_000, `${m.name}'s database committed ${key}`);
}

async function keepAlive(m: ClusterMember, id: string): Promise<string | undefined> {
  const r = await fetch(m.clientUrl + "/v3/lease/keepalive", { method: "POST", body: JSON.stringify({ ID: id }), signal: AbortSignal.timeout(20_000) });
  const line = (await r.text()).trim().split("\n")[0] ?? "";
  return (JSON.parse(line) as { result?: { TTL?: string } }).result?.TTL;
}

async function start(flags: string[]): Promise<TestCluster> {
  const c = await startCluster(3, [...timing, ...flags]);
  clusters.push(c);
  return c;
}

async function leaderOf(c: TestCluster): Promise<ClusterMember> {
  let leader: ClusterMember | undefined;
  await until(async () => (leader = await c.leader()) !== undefined, 15_000, "a leader");
  return leader!;
}

/** Kills the leader and waits for the next; answers the new leader and the killed member. */
async function killLeader(c: TestCluster): Promise<{ leader: ClusterMember; killed: ClusterMember }> {
  const killed = await leaderOf(c);
  await c.kill(killed, "SIGKILL");
  let leader: ClusterMember | undefined;
  await until(async () => (leader = await c.leader()) !== undefined && leader !== killed, 15_000, "a new leader");
  return { leader: leader!, killed };
}

test("with lease checkpoints, a new leader resumes a lease from its remaining TTL", { timeout: 180_000 }, async (t) => {
  const c = await start(["--experimental-enable-lease-checkpoint", "--experimental-enable-lease-checkpoint-persist", "--experimental-lease-checkpoint-interval", "1s"]);
  let leader = await leaderOf(c);
  // The grant took effect between these two: the lease's seconds left by the clock are
  // counted from the first for the lower bound, from the second for the upper one.
  const granting = Date.now();
  const id = await grant(leader, TTL);
  const granted = Date.now();

  await t.test("the leader's death does not give the lease its full TTL again", async () => {
    // Five seconds on, the last checkpoint (at most an interval old, rounded up) has at most TTL - 3 left.
    await ttlAtMost(leader, id, TTL - 5);
    const killing = Date.now();
    const killed = await killLeader(c);
    leader = killed.leader;
    const ttl = await timeToLive(leader, id);
    const answered = Date.now();
    const most = TTL - (answered - granted) / 1000 + resumeSlackS(answered - killing);
    // The promotion adds an election timeout to the checkpoint, which had at least the
    // seconds left then; the answer is rounded down (1 s).
    const least = TTL - (answered - granting) / 1000 - 1;
    assert.ok(ttl <= TTL - 3, `resumed with ${ttl} s, not the full ${TTL}`);
    assert.ok(ttl >= least && ttl <= most, `TTL ${ttl} s, expected ${least.toFixed(1)}-${most.toFixed(1)} s by the clock (killed ${answered - killing} ms before the answer)`);
    await c.start(killed.killed);
    assert.ok(await healthy(killed.killed.clientUrl, 20_000), "the killed member back");
  });

  await t.test("a keepalive clears the checkpoint: a leader change right after it keeps the full TTL", async () => {
    const renewing = Date.now();
    assert.equal(await keepAlive(c.members.find((m) => m !== leader)!, id), String(TTL), "forwarded to the leader");
    const killed = await killLeader(c);
    leader = killed.leader;
    const ttl = await timeToLive(leader, id);
    // The checkpoints after the keepalive count from it (the lease lives its full TTL from
    // then; the promotion adds an election timeout); the answer is rounded down (1 s). The
    // older checkpoint had at most TTL - 3.
    const least = TTL - (Date.now() - renewing) / 1000 - 1 + ELECTION_MS / 1000;
    assert.ok(ttl >= least, `TTL ${ttl} s after the keepalive and a leader change, at least ${least.toFixed(1)} s expected (the older checkpoint had less)`);
    await c.start(killed.killed);
    assert.ok(await healthy(killed.killed.clientUrl, 20_000), "the killed member back");
  });

  await t.test("persisted: after every member restarts, the lease resumes from its last checkpoint", async () => {
    // Low enough that the bound below stays under the full TTL a restart without the
    // persisted checkpoints would give.
    const before = await ttlAtMost(leader, id, TTL - 6);
    const asked = Date.now();
    // A write after the checkpoints, committed by every member's database, moves its
    // consistent index past them: the restart finds those in the lease table, not by
    // replaying the WAL. The leader checkpoints on until the kill, though, and the last
    // checkpoint may still come back from the WAL (this passes without -persist too).
    await gatewayPost(leader.clientUrl, "/v3/kv/put", { key: Buffer.from("after").toString("base64"), value: "" });
    await Promise.all(c.members.map((m) => committedOn(m, "after")));
    await Promise.all(c.members.map((m) => c.kill(m, "SIGKILL")));
    for (const m of c.members) await c.start(m);
    for (const m of c.members) assert.ok(await healthy(m.clientUrl, 20_000), `${m.name} back`);
    leader = await leaderOf(c);
    const ttl = await timeToLive(leader, id);
    const answered = Date.now();
    // `before` is rounded down (1 s); the last checkpoint is at most resumeSlackS older than
    // its answer (the members ran on for a commit or two after it).
    const most = before + 1 + resumeSlackS(0);
    // The lease's clock ran at most from that answer to this one (it stands still while no
    // member leads); the answer is rounded down (1 s).
    const least = before - (answered - asked) / 1000 - 1;
    assert.ok(most < TTL, "the bound tells a resumed lease from one given its full TTL");
    assert.ok(ttl <= most && ttl >= least, `TTL ${ttl} s after the restart, ${before} s before it: ${least.toFixed(1)}-${most.toFixed(1)} s expected (full: ${TTL})`);
  });
});

test("without lease checkpoints (etcd 3.4's default), a new leader gives the lease its full TTL again", { timeout: 120_000 }, async () => {
  const c = await start([]);
  const leader = await leaderOf(c);
  const id = await grant(leader, TTL);
  await ttlAtMost(leader, id, TTL - 4);
  const { leader: next } = await killLeader(c);
  const ttl = await timeToLive(next, id);
  assert.ok(ttl >= TTL - 1, `TTL ${ttl} s: refreshed to the full ${TTL}`);
});
