// A v3 watch on a follower sees every event of a write burst, in
// revision order, with no gap and no duplicate, across a leader change (the leader is
// killed with SIGKILL in the middle of the burst). Three real members, the JSON gateway.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startCluster, type ClusterMember, type TestCluster } from "../helpers/cluster.ts";
import { gatewayWatch, until as untilHttp } from "../helpers/http.ts";
import { until } from "../../src/until.test-helper.ts";

let cluster: TestCluster | undefined;
after(async () => {
  await cluster?.stop();
});

const b64 = (s: string): string => Buffer.from(s).toString("base64");

async function post(url: string, path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const r = await fetch(url + path, { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(5000) });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
}

interface WatchEvent {
  kv: { key: string; mod_revision: string };
}


test("a watch on a follower sees every event of a write burst in order, across a leader change", { timeout: 90_000 }, async () => {
  cluster = await startCluster(3, ["--heartbeat-interval", "50", "--election-timeout", "500"]);
  const leader = await cluster.leader();
  assert.ok(leader);
  const followers = cluster.members.filter((m) => m !== leader);
  const watcher = followers[0]!;
  const writer: ClusterMember = followers[1]!;

  const w = gatewayWatch(watcher.clientUrl, { key: b64("burst/"), range_end: b64("burst0") });
  await untilHttp(() => w.results.some((r) => r["created"] === true), 5000, "watch created");

  const acked = new Set<string>();
  const total = 200;
  let next = 0;
  const writeOne = async (i: number): Promise<void> => {
    const key = `burst/${String(i).padStart(4, "0")}`;
    // Writes go to both surviving members in turn; a write that fails during the election
    // (an error answer or connection trouble) is retried every 100 ms.
    let attempt = 0;
    await until(
      async () => {
        const target = attempt++ % 2 === 0 ? writer : watcher;
        return (await post(target.clientUrl, "/v3/kv/put", { key: b64(key), value: b64(`v${i}`) })).status === 200;
      },
      `write ${i} acknowledged by ${writer.name} or ${watcher.name}`,
      20_000,
      { intervalMs: 100, ignoreErrors: true },
    );
    acked.add(key);
  };
  const workers = Array.from({ length: 8 }, async () => {
    while (next < total) {
      const i = next++;
      if (i === total / 2) await cluster!.kill(leader, "SIGKILL");
      await writeOne(i);
    }
  });
  await Promise.all(workers);
  assert.equal(acked.size, total);

  // What the key space says: each key written once, so its mod_revision is its event's revision.
  const range = await post(writer.clientUrl, "/v3/kv/range", { key: b64("burst/"), range_end: b64("burst0") });
  const kvs = (range.json["kvs"] as Array<{ key: string; mod_revision: string }>) ?? [];
  assert.equal(kvs.length, total);
  const expected = kvs.map((kv) => Number(kv.mod_revision)).sort((x, y) => x - y);

  await untilHttp(() => w.results.flatMap((r) => (r["events"] as WatchEvent[] | undefined) ?? []).length >= total, 20_000, "every event at the watcher");
  const seen = w.results.flatMap((r) => (r["events"] as WatchEvent[] | undefined) ?? []).map((e) => Number(e.kv.mod_revision));
  w.close();
  assert.deepStrictEqual(seen, expected, "every revision once, in order");
  assert.equal(new Set(w.results.flatMap((r) => (r["events"] as WatchEvent[] | undefined) ?? []).map((e) => Buffer.from(e.kv.key, "base64").toString())).size, total);
});
