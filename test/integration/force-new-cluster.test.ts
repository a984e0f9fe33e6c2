// --force-new-cluster (etcd's restartAsStandaloneNode): a 3-member cluster loses two members
// and their data for good; the survivor restarts alone with every acknowledged v2 and v3
// key, serves writes, keeps working after a restart without the flag, and grows again with
// `kvctl member add` + a member started with --initial-cluster-state existing.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { startCluster, healthy, type ClusterMember } from "../helpers/cluster.ts";
import { runKvctl } from "../helpers/server.ts";
import { agent, http, json, until } from "../helpers/http.ts";

after(() => agent.destroy());

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");

async function v3Put(url: string, key: string, value: string): Promise<number> {
  const r = await fetch(`${url}/v3/kv/put`, { method: "POST", body: JSON.stringify({ key: b64(key), value: b64(value) }), signal: AbortSignal.timeout(10_000) });
  await r.arrayBuffer();
  return r.status;
}

/** Every v3 key under `prefix` with its value (a linearizable range). */
async function v3Prefix(url: string, prefix: string): Promise<Map<string, string>> {
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const r = await fetch(`${url}/v3/kv/range`, { method: "POST", body: JSON.stringify({ key: b64(prefix), range_end: b64(end) }), signal: AbortSignal.timeout(10_000) });
  const body = (await r.json()) as { kvs?: Array<{ key: string; value?: string }> };
  const out = new Map<string, string>();
  for (const kv of body.kvs ?? []) out.set(Buffer.from(kv.key, "base64").toString("utf8"), Buffer.from(kv.value ?? "", "base64").toString("utf8"));
  return out;
}

async function v2Values(url: string, dir: string): Promise<Map<string, string>> {
  const r = await json<{ node?: { nodes?: Array<{ key: string; value?: string }> } }>("GET", `${url}/v2/keys${dir}?recursive=true`);
  return new Map((r.body.node?.nodes ?? []).map((n) => [n.key, n.value ?? ""]));
}

async function assertAllKeys(url: string, v2: Map<string, string>, v3: Map<string, string>, who: string): Promise<void> {
  assert.deepEqual(await v2Values(url, "/f"), v2, `${who}: every acknowledged v2 key`);
  assert.deepEqual(await v3Prefix(url, "f3/"), v3, `${who}: every acknowledged v3 key`);
}

test("a survivor restarted with --force-new-cluster serves all its data alone, and a member added later catches up", { timeout: 180_000 }, async () => {
  // A small --snapshot-count: the survivor restarts from a snapshot plus the WAL after it,
  // and the member added at the end gets a snapshot with the v3 database.
  const cluster = await startCluster(3, ["--heartbeat-interval", "50", "--election-timeout", "500", "--snapshot-count", "40"]);
  try {
    await until(async () => (await cluster.leader()) !== undefined, 10_000, "a leader");
    const [a, b, c] = cluster.members as [ClusterMember, ClusterMember, ClusterMember];
    const v2 = new Map<string, string>();
    const v3 = new Map<string, string>();
    for (let i = 0; i < 60; i++) {
      const m = cluster.members[i % 3] as ClusterMember;
      const w = await http("PUT", `${m.clientUrl}/v2/keys/f/k${i}`, { value: `v2-${i}` });
      assert.equal(w.status, 201);
      v2.set(`/f/k${i}`, `v2-${i}`);
      assert.equal(await v3Put(m.clientUrl, `f3/k${i}`, `v3-${i}`), 200);
      v3.set(`f3/k${i}`, `v3-${i}`);
    }
    // As with etcd, the survivor keeps what its log says is committed: it has heard of the
    // last commit once it serves a write made after all the others from its own store.
    assert.equal((await http("PUT", `${b.clientUrl}/v2/keys/f/last`, { value: "l" })).status, 201);
    v2.set("/f/last", "l");
    await until(async () => (await http("GET", `${a.clientUrl}/v2/keys/f/last`)).status === 200, 10_000, "the survivor to apply the last write");
    // Quorum lost for good: two members and their data are gone.
    await cluster.kill(b, "SIGKILL");
    await cluster.kill(c, "SIGKILL");
    rmSync(b.dataDir, { recursive: true, force: true });
    rmSync(c.dataDir, { recursive: true, force: true });
    await cluster.kill(a, "SIGKILL");

    await cluster.start(a, { flags: ["--force-new-cluster"] });
    assert.ok(await healthy(a.clientUrl, 20_000), a.log.join("").slice(-3000));
    assert.match(a.log.join(""), /forcing a new one-member cluster/);
    await assertAllKeys(a.clientUrl, v2, v3, "survivor");
    assert.equal((await http("PUT", `${a.clientUrl}/v2/keys/f/alone`, { value: "x" })).status, 201);
    v2.set("/f/alone", "x");
    assert.equal(await v3Put(a.clientUrl, "f3/alone", "y"), 200);
    v3.set("f3/alone", "y");
    const list = await runKvctl(["--endpoints", a.clientUrl, "member", "list"]);
    assert.equal(list.code, 0, list.stderr);
    const lines = list.stdout.trim().split("\n");
    assert.equal(lines.length, 1, list.stdout);
    assert.match(lines[0] ?? "", new RegExp(`name=${a.name} peerURLs=${a.peerUrl} clientURLs=${a.clientUrl} isLeader=true`));

    // A restart without the flag: the removals are in the log, the member is still alone.
    await cluster.kill(a, "SIGTERM");
    a.log.length = 0;
    await cluster.start(a);
    assert.ok(await healthy(a.clientUrl, 20_000), a.log.join("").slice(-3000));
    assert.doesNotMatch(a.log.join(""), /forcing a new one-member cluster/);
    await assertAllKeys(a.clientUrl, v2, v3, "survivor restarted without the flag");
    assert.equal((await http("PUT", `${a.clientUrl}/v2/keys/f/again`, { value: "z" })).status, 201);
    v2.set("/f/again", "z");

    // The cluster grows again as any running cluster does.
    const d = await cluster.spare("m3");
    const add = await runKvctl(["--endpoints", a.clientUrl, "member", "add", d.name, d.peerUrl]);
    assert.equal(add.code, 0, add.stderr);
    await cluster.start(d, { state: "existing", initialCluster: `${a.name}=${a.peerUrl},${d.name}=${d.peerUrl}` });
    assert.ok(await healthy(d.clientUrl, 20_000), d.log.join("").slice(-3000));
    await until(async () => (await http("GET", `${d.clientUrl}/v2/keys/f/again`)).status === 200, 15_000, "the new member to catch up");
    await assertAllKeys(d.clientUrl, v2, v3, "added member");
    const two = await runKvctl(["--endpoints", d.clientUrl, "member", "list"]);
    assert.equal(two.code, 0, two.stderr);
    assert.equal(two.stdout.trim().split("\n").length, 2, two.stdout);
    // Both vote now: a write needs and gets the two of them.
    assert.equal((await http("PUT", `${d.clientUrl}/v2/keys/f/two`, { value: "w" })).status, 201);
    assert.equal(await v3Put(a.clientUrl, "f3/two", "w"), 200);
    await until(async () => (await http("GET", `${a.clientUrl}/v2/keys/f/two`)).status === 200, 10_000, "the write to reach the survivor");
  } finally {
    await cluster.stop();
  }
});
