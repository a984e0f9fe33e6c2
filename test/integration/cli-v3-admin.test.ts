// `kvctl v3 member|endpoint|move-leader|lock|elect` against a real 3-member `kvctl serve`
// cluster, with the real client (bin/kvctl):
// (a) member list and endpoint status/health (--cluster) describe the three members, one
//     leader; a dead endpoint makes health exit 1 and status name it on stderr;
// (b) member add --learner prints the ETCD_* lines, the learner is listed unstarted, then
//     updated and removed;
// (c) move-leader hands leadership to the named member;
// (d) lock: the second locker (on another member) waits while the first holds the lock,
//     and runs its command with ETCD_LOCK_KEY/ETCD_LOCK_REV once the first is interrupted;
// (e) elect: an observer sees the campaigner's proposal; an interrupted leader resigns.
// etcdctl's texts for the same answers are pinned in src/cli/commands/v3/printers-cluster.test.ts.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { runKvctl, spawnKvctl } from "../helpers/server.ts";
import { startCluster, type TestCluster } from "../helpers/cluster.ts";
import { eventually } from "../../src/until.test-helper.ts";

let cluster: TestCluster;
const urls = (): string => cluster.members.map((m) => m.clientUrl).join(",");
const v3 = (args: string[], endpoints = urls()) => runKvctl(["v3", "--endpoints", endpoints, ...args], { timeoutMs: 30_000 });

interface StatusJson {
  Endpoint: string;
  Status: { header: { member_id: number }; leader: number; raftTerm: number };
}

/** endpoint status -w json parsed; member IDs fit no JS number, so they are compared as text. */
async function statuses(): Promise<{ endpoint: string; id: string; leader: string }[]> {
  const r = await v3(["endpoint", "status", "-w", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const big = r.stdout.replace(/"(member_id|leader)":(\d+)/g, '"$1":"$2"');
  return (JSON.parse(big) as StatusJson[]).map((s) => ({ endpoint: s.Endpoint, id: BigInt(String(s.Status.header.member_id)).toString(16), leader: BigInt(String(s.Status.leader)).toString(16) }));
}

before(async () => {
  cluster = await startCluster(3);
});
after(() => cluster?.stop());

describe("member and endpoint", () => {
  test("member list and endpoint status/health --cluster agree on the three members and one leader", async () => {
    const list = await v3(["member", "list"], cluster.members[0]!.clientUrl);
    assert.equal(list.code, 0, list.stderr);
    const rows = list.stdout.trimEnd().split("\n").map((l) => l.split(", "));
    assert.equal(rows.length, 3);
    for (const m of cluster.members) {
      const row = rows.find((r) => r[2] === m.name);
      assert.ok(row !== undefined, `${m.name} listed`);
      assert.deepEqual(row.slice(1), ["started", m.name, m.peerUrl, m.clientUrl, "false"]);
      assert.match(row[0]!, /^[0-9a-f]+$/);
    }

    const st = await v3(["endpoint", "status", "--cluster"], cluster.members[1]!.clientUrl);
    assert.equal(st.code, 0, st.stderr);
    const lines = st.stdout.trimEnd().split("\n").map((l) => l.split(", "));
    assert.equal(lines.length, 3);
    assert.deepEqual(lines.map((l) => l[1]).sort(), rows.map((r) => r[0]).sort(), "status IDs are the member IDs");
    assert.equal(lines.filter((l) => l[4] === "true").length, 1, st.stdout);
    const table = await v3(["endpoint", "status", "-w", "table"]);
    assert.match(table.stdout, /\| +ENDPOINT +\| +ID +\| VERSION \| DB SIZE \| IS LEADER \| IS LEARNER \| RAFT TERM \| RAFT INDEX \| RAFT APPLIED INDEX \| ERRORS \|/);

    const health = await v3(["endpoint", "health", "--cluster"]);
    assert.equal(health.code, 0, health.stderr);
    assert.equal(health.stdout, "");
    for (const m of cluster.members) assert.match(health.stderr, new RegExp(`^${m.clientUrl} is healthy: successfully committed proposal: took = [0-9.]+(ms|µs|s)$`, "m"));
  });

  test("a dead endpoint: health exits 1 naming it, status reports it and still prints the others", async () => {
    const dead = "http://127.0.0.1:9"; // discard port: nothing listens on loopback
    const health = await v3(["endpoint", "health", "-w", "json"], `${cluster.members[0]!.clientUrl},${dead}`);
    assert.equal(health.code, 1);
    assert.equal(health.stderr, "Error: unhealthy cluster\n");
    const parsed = JSON.parse(health.stdout) as { endpoint: string; health: boolean; error?: string }[];
    const deadRow = parsed.find((h) => h.endpoint === dead);
    assert.deepEqual([deadRow?.health, deadRow?.error], [false, "context deadline exceeded"]);
    assert.deepEqual(parsed.find((h) => h.endpoint !== dead)?.health, true);

    const st = await v3(["endpoint", "status"], `${cluster.members[0]!.clientUrl},${dead}`);
    assert.equal(st.code, 1);
    assert.equal(st.stderr, `Failed to get the status of endpoint ${dead} (context deadline exceeded)\n`);
    assert.ok(st.stdout.startsWith(`${cluster.members[0]!.clientUrl}, `), st.stdout);
  });

  test("member add --learner, update, remove", async () => {
    const spare = await cluster.spare("m3");
    const add = await v3(["member", "add", "m3", "--peer-urls", spare.peerUrl, "--learner"]);
    assert.equal(add.code, 0, add.stderr);
    const m = /^Member +([0-9a-f]+) added to cluster +([0-9a-f]+)\n\nETCD_NAME="m3"\nETCD_INITIAL_CLUSTER="(.*)"\nETCD_INITIAL_ADVERTISE_PEER_URLS="(.*)"\nETCD_INITIAL_CLUSTER_STATE="existing"\n$/.exec(add.stdout);
    assert.ok(m !== null, add.stdout);
    const id = m[1]!;
    assert.equal(m[4], spare.peerUrl);
    assert.deepEqual(m[3]!.split(",").sort(), [...cluster.members.map((x) => `${x.name}=${x.peerUrl}`), `m3=${spare.peerUrl}`].sort());

    const listed = await v3(["member", "list"]);
    assert.ok(listed.stdout.includes(`${id}, unstarted, , ${spare.peerUrl}, , true\n`), listed.stdout);

    const other = spare.peerUrl.replace(/:(\d+)$/, (_s, p: string) => `:${Number(p) + 1}`);
    const upd = await v3(["member", "update", id, `--peer-urls=${other}`]);
    assert.equal(upd.code, 0, upd.stderr);
    assert.match(upd.stdout, new RegExp(`^Member +${id} updated in cluster +${m[2]}\n$`));
    assert.ok((await v3(["member", "list"])).stdout.includes(`${id}, unstarted, , ${other}, , true\n`));

    const bad = await v3(["member", "update", id, "--peer-urls", "ftp://x:1"]);
    assert.deepEqual([bad.code, bad.stderr], [1, "Error: URL scheme must be http, https, unix, or unixs: ftp://x:1\n"]);

    const rm = await v3(["member", "remove", id]);
    assert.equal(rm.code, 0, rm.stderr);
    assert.match(rm.stdout, new RegExp(`^Member +${id} removed from cluster +${m[2]}\n$`));
    assert.ok(!(await v3(["member", "list"])).stdout.includes(id));
    const again = await v3(["member", "remove", id]);
    assert.deepEqual([again.code, again.stderr], [1, "Error: etcdserver: member not found\n"]);
  });

  test("move-leader hands leadership to the named member", async () => {
    const before = await statuses();
    const leader = before.find((s) => s.id === s.leader);
    assert.ok(leader !== undefined, JSON.stringify(before));
    const target = before.find((s) => s.id !== leader.id)!;
    const r = await v3(["move-leader", target.id]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `Leadership transferred from ${leader.id} to ${target.id}\n`);
    await eventually(async () => ((await statuses()).every((s) => s.leader === target.id) ? true : undefined), "every member follows the new leader", 10_000);
    const notLeader = await v3(["move-leader", leader.id], target.endpoint === before[0]!.endpoint ? before[1]!.endpoint : before[0]!.endpoint);
    assert.equal(notLeader.code, 128);
    assert.match(notLeader.stderr, /^Error: no leader endpoint given at \[http:\/\/127\.0\.0\.1:\d+\]\n$/);
  });
});

describe("lock and elect", () => {
  test("the second locker waits until the first is interrupted, then runs its command", async () => {
    const [a, b] = [cluster.members[0]!.clientUrl, cluster.members[1]!.clientUrl];
    const first = spawnKvctl(["v3", "--endpoints", a, "lock", "job"]);
    await first.waitForOutput((out) => /^job\/[0-9a-f]+\n\n$/.test(out));
    const firstKey = first.stdout().split("\n")[0]!;
    const second = spawnKvctl(["v3", "--endpoints", b, "lock", "job", "--", "sh", "-c", 'echo "$ETCD_LOCK_KEY $ETCD_LOCK_REV"']);
    // The waiter's key is in the store: it queued behind the holder.
    await eventually(async () => ((await v3(["get", "--prefix", "job/", "--keys-only"])).stdout.split("\n").filter((l) => l !== "").length === 2 ? true : undefined), "two keys under job/", 10_000);
    assert.equal(second.stdout(), "", "the second locker ran its command while the first held the lock");
    const held = await v3(["get", firstKey, "-w", "json"]);
    const firstRev = Number(/"mod_revision":(\d+)/.exec(held.stdout)?.[1]);

    first.child.kill("SIGINT");
    assert.deepEqual(await first.exited, { code: 0, signal: null });
    assert.deepEqual(await second.exited, { code: 0, signal: null }, second.stderr());
    const [key, rev] = second.stdout().trim().split(" ");
    assert.match(key!, /^job\/[0-9a-f]+$/);
    assert.notEqual(key, firstKey);
    assert.ok(Number(rev) > firstRev, `lock revision ${rev} after the first holder's ${firstRev}`);
    assert.equal((await v3(["get", "--prefix", "job/"])).stdout, "", "both keys released");
  });

  test("an interrupted waiter exits 1 with context canceled and leaves no key", async () => {
    const holder = spawnKvctl(["v3", "--endpoints", urls(), "lock", "q"]);
    await holder.waitForOutput((out) => out.endsWith("\n\n"));
    const waiter = spawnKvctl(["v3", "--endpoints", urls(), "lock", "q"]);
    await eventually(async () => ((await v3(["get", "--prefix", "q/", "--count-only", "-w", "fields"])).stdout.includes('"Count" : 2') ? true : undefined), "waiter queued", 10_000);
    waiter.child.kill("SIGINT");
    assert.deepEqual(await waiter.exited, { code: 1, signal: null });
    assert.equal(waiter.stderr(), "Error: context canceled\n");
    assert.ok((await v3(["get", "--prefix", "q/", "--count-only", "-w", "fields"])).stdout.includes('"Count" : 1'));
    holder.child.kill("SIGTERM");
    assert.equal((await holder.exited).code, 0);
  });

  test("elect: the observer sees the leader's proposal; the interrupted leader resigns", async () => {
    const observer = spawnKvctl(["v3", "--endpoints", cluster.members[2]!.clientUrl, "elect", "-l", "boss"]);
    const leader = spawnKvctl(["v3", "--endpoints", cluster.members[0]!.clientUrl, "elect", "boss", "p1"]);
    await leader.waitForOutput((out) => /^boss\/[0-9a-f]+\np1\n$/.test(out));
    await observer.waitForOutput((out) => out === leader.stdout());
    leader.child.kill("SIGINT");
    assert.deepEqual(await leader.exited, { code: 0, signal: null });
    assert.equal((await v3(["get", "--prefix", "boss/"])).stdout, "", "resigned");
    observer.child.kill("SIGINT");
    assert.deepEqual(await observer.exited, { code: 0, signal: null });

    const usage = await v3(["elect", "boss"]);
    assert.deepEqual([usage.code, usage.stderr], [128, "Error: no proposal argument but -l not set\n"]);
  });
});
