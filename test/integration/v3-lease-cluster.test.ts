// Lease keepalives renewed in the leader's memory (lease-keeper.ts), on three real members
// over the JSON gateway (and gRPC through etcdctl when it is installed): a follower forwards
// keepalives to the leader, keepalives add nothing to the log, only the leader expires
// leases (revoking them through the log, so every member deletes their keys), and a new
// leader gives every lease its TTL again instead of expiring the ones it never saw renewed.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startCluster, type ClusterMember, type TestCluster } from "../helpers/cluster.ts";
import { gatewayPost, until } from "../helpers/http.ts";
import { etcdctl, installed } from "../helpers/grpc.ts";

let cluster: TestCluster | undefined;
after(async () => {
  await cluster?.stop();
});

const ELECTION_MS = 500;
const TTL_S = 2;
/**
 * By when a lease granted at t is revoked on the leader if nothing renews it: its TTL (a
 * new leader adds an election timeout), then the leader's next expiry check (every 100 ms)
 * and the revocation's commit, a second at most on a loaded machine. The second test
 * asserts this bound; the others keep a lease alive for that long to show it would have
 * expired without its keepalives.
 */
const EXPIRED_BY_MS = TTL_S * 1000 + ELECTION_MS + 1000;
/** Keepalives as etcd's client sends them: every third of the TTL. */
const KEEPALIVE_EVERY_MS = (TTL_S * 1000) / 3;
const b64 = (s: string): string => Buffer.from(s).toString("base64");
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function grant(m: ClusterMember, ttl: number): Promise<string> {
  const r = await gatewayPost(m.clientUrl, "/v3/lease/grant", { TTL: ttl });
  return r["ID"] as string;
}

/** One keepalive on the gateway's stream endpoint: the result line, or the error chunk. */
async function keepAlive(m: ClusterMember, id: string): Promise<{ result?: { TTL?: string }; message?: string }> {
  const r = await fetch(m.clientUrl + "/v3/lease/keepalive", { method: "POST", body: JSON.stringify({ ID: id }), signal: AbortSignal.timeout(20_000) });
  const line = (await r.text()).trim().split("\n")[0] ?? "";
  return JSON.parse(line) as { result?: { TTL?: string }; message?: string };
}

async function timeToLive(m: ClusterMember, id: string): Promise<number> {
  return Number((await gatewayPost(m.clientUrl, "/v3/lease/timetolive", { ID: id }))["TTL"]);
}

/** Whether `key` exists on member `m`, read locally (serializable). */
async function has(m: ClusterMember, key: string): Promise<boolean> {
  const r = await gatewayPost(m.clientUrl, "/v3/kv/range", { key: b64(key), serializable: true });
  return Number(r["count"] ?? 0) > 0;
}

async function raftIndex(m: ClusterMember): Promise<{ committed: number; applied: number }> {
  const s = await gatewayPost(m.clientUrl, "/v3/maintenance/status", {});
  return { committed: Number(s["raftIndex"]), applied: Number(s["raftAppliedIndex"]) };
}

function alive(m: ClusterMember): boolean {
  return m.process !== undefined && m.process.exitCode === null && m.process.signalCode === null;
}

test("three members: keepalives through a follower, expiry by the leader, a leader's death", { timeout: 120_000 }, async (t) => {
  cluster = await startCluster(3, ["--heartbeat-interval", "50", "--election-timeout", String(ELECTION_MS)]);
  let leader = await cluster.leader();
  assert.ok(leader);
  const followers = cluster.members.filter((m) => m !== leader);
  const f0 = followers[0]!;
  const f1 = followers[1]!;

  await t.test("a lease kept alive through a follower outlives its TTL, and the keepalives add nothing to the log", async () => {
    const id = await grant(f0, TTL_S);
    await gatewayPost(f0.clientUrl, "/v3/kv/put", { key: b64("kept"), value: b64("v"), lease: id });
    await until(async () => (await has(f1, "kept")) && (await has(leader!, "kept")), 5000, "the put applied everywhere");
    const before = await Promise.all(cluster!.members.map(raftIndex));
    const started = Date.now();
    let keepalives = 0;
    // No event says "still alive": keep it alive for as long as it would take to expire
    // unrenewed. The loop ends with a keepalive: the TTL read below has a whole TTL to go.
    for (;;) {
      const r = await keepAlive(f0, id);
      assert.equal(r.result?.TTL, String(TTL_S), JSON.stringify(r));
      keepalives++;
      if (Date.now() - started >= EXPIRED_BY_MS) break;
      await sleep(KEEPALIVE_EVERY_MS);
    }
    assert.ok(await has(f1, "kept"), `kept alive for ${Date.now() - started} ms with a TTL of ${TTL_S} s`);
    const ttl = await timeToLive(f1, id);
    assert.ok(ttl >= 1 && ttl <= 2, `TimeToLive on a follower answers the leader's ${ttl}`);
    if (installed("etcdctl")) {
      const r = await etcdctl(f1.clientUrl, ["lease", "keep-alive", "--once", BigInt(id).toString(16)]);
      assert.match(r.stdout, /keepalived with TTL\(2\)/, r.stderr);
      keepalives++;
    }
    const afterIdx = await Promise.all(cluster!.members.map(raftIndex));
    for (let i = 0; i < afterIdx.length; i++) {
      assert.ok(afterIdx[i]!.committed - before[i]!.committed <= 1, `member ${i}: ${keepalives} keepalives moved the commit index ${before[i]!.committed} -> ${afterIdx[i]!.committed}`);
      assert.ok(afterIdx[i]!.applied - before[i]!.applied <= 1, `member ${i}: applied ${before[i]!.applied} -> ${afterIdx[i]!.applied}`);
    }
  });

  await t.test("a lease not kept alive expires within TTL + an election timeout, its keys gone on every member", async () => {
    // The lease's clock starts on the server between these two: the lower bound counts from
    // the first, the upper from the second.
    const granting = Date.now();
    const id = await grant(f1, TTL_S);
    const granted = Date.now();
    await gatewayPost(f1.clientUrl, "/v3/kv/put", { key: b64("doomed"), value: b64("v"), lease: id });
    await until(async () => (await Promise.all(cluster!.members.map((m) => has(m, "doomed")))).every(Boolean), 5000, "the put applied everywhere");
    // Watched from the start: the lower bound below is what shows it did not expire before its TTL.
    await until(async () => !(await has(leader!, "doomed")), 5000, "the leader's revocation");
    const goneAt = Date.now();
    assert.ok(goneAt - granting >= TTL_S * 1000, `not expired before its TTL: gone ${goneAt - granting} ms after the grant was asked`);
    assert.ok(goneAt - granted <= EXPIRED_BY_MS, `expired after ${goneAt - granted} ms`);
    await until(async () => !(await has(f0, "doomed")) && !(await has(f1, "doomed")), 2000, "the keys gone on the followers");
    assert.equal(await timeToLive(f0, id), -1);
    const r = await keepAlive(f1, id);
    assert.ok(r.result !== undefined && r.result.TTL === undefined, `a keepalive of a revoked lease answers no TTL (etcd's 0): ${JSON.stringify(r)}`);
  });

  await t.test("killing the leader does not expire a lease kept alive through a follower", async () => {
    const id = await grant(f0, TTL_S);
    await gatewayPost(f0.clientUrl, "/v3/kv/put", { key: b64("survivor"), value: b64("v"), lease: id });
    await until(async () => has(f0, "survivor"), 5000, "the put applied on f0");
    let stop = false;
    // Errors are allowed while there is no leader; an answer without the TTL means the lease was gone.
    // A client's keepalives, paced in real time as a client's are: what the test shows is
    // that they keep the lease through the election, so the pace is the point.
    const gone: string[] = [];
    let answered = 0;
    const loop = (async () => {
      while (!stop) {
        try {
          const r = await keepAlive(f0, id);
          if (r.result !== undefined && r.result.TTL !== String(TTL_S)) gone.push(JSON.stringify(r));
          answered++;
        } catch {
          // the request timed out during the election
        }
        await sleep(KEEPALIVE_EVERY_MS);
      }
    })();
    await until(() => answered >= 2, 5000, "two keepalives answered before the kill");
    await cluster!.kill(leader!, "SIGKILL");
    await until(async () => {
      const l = await cluster!.leader();
      if (l === undefined) return false;
      leader = l;
      return true;
    }, 10_000, "a new leader");
    // The new leader gives every lease its TTL (and an election timeout) again; had the
    // keepalives stopped reaching it, the lease would be revoked within EXPIRED_BY_MS.
    // Kept alive that long, with keepalives answered after the election, shows they do.
    const elected = Date.now();
    const answeredBefore = answered;
    await until(() => answered > answeredBefore + 1 && Date.now() - elected >= EXPIRED_BY_MS, EXPIRED_BY_MS + 20_000, "keepalives answered by the new leader for longer than an unrenewed lease lives");
    stop = true;
    await loop;
    assert.ok(await has(f0, "survivor"), "the kept-alive lease survived the leader's death");
    assert.ok(await has(f1, "survivor"));
    assert.deepEqual(gone, [], "no keepalive found the lease gone");
    // Left alone, the new leader expires it.
    await until(async () => !(await has(f0, "survivor")) && !(await has(f1, "survivor")), EXPIRED_BY_MS + 2000, "expiry by the new leader");
  });

  await t.test("with no leader, a keepalive fails with etcdserver: no leader", async () => {
    const id = await grant(f0, 30);
    const other = cluster!.members.find((m) => m !== f0 && alive(m));
    assert.ok(other);
    await cluster!.kill(other, "SIGKILL");
    // A leader that lost its quorum steps down after an election timeout (check-quorum).
    await until(async () => (await gatewayPost(f0.clientUrl, "/v3/maintenance/status", {}))["leader"] === undefined, 5000, "f0 to have no leader");
    const r = await keepAlive(f0, id);
    assert.equal(r.message, "etcdserver: no leader", JSON.stringify(r));
  });
});
