// A member's v2 store saved in a snapshot and read back at restart: in format 2 (a line per
// node, src/server/snapshot-data.ts), and from a format-1 snapshot (one JSON text) left by
// an earlier version. Why this proves a v2 store larger than V8's longest string
// (0x1fffffe8 characters) restarts, without writing 512 MB: the member's own snapshot file
// is decoded here with Buffer#toString and JSON.parse watched, and neither sees more than
// one line; the image's size therefore never becomes a string, at any size.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { startServer } from "../helpers/server.ts";
import { agent, json } from "../helpers/http.ts";
import { Snapshotter } from "../../src/wal/index.ts";
import { V2Store } from "../../src/store/v2/index.ts";
import { decodeSnapshotData, SNAPSHOT_MAGIC } from "../../src/server/snapshot-data.ts";
import { measureStrings } from "../../src/string-sizes.test-helper.ts";

after(() => agent.destroy());

interface V2Node {
  key: string;
  value?: string;
  dir?: boolean;
  expiration?: string;
  modifiedIndex: number;
  createdIndex: number;
  nodes?: V2Node[];
}

/** Every node under / (hidden ones asked for by name), without ttl (it counts down). */
async function dump(url: string): Promise<unknown> {
  const strip = (n: V2Node): unknown => ({ ...n, ttl: undefined, nodes: n.nodes?.map(strip) });
  const all = await json<{ node: V2Node }>("GET", `${url}/v2/keys/?recursive=true&sorted=true`);
  const hidden = await json<{ node: V2Node }>("GET", `${url}/v2/keys/_hidden`);
  const queue = await json<{ node: V2Node }>("GET", `${url}/v2/keys/queue?recursive=true&sorted=true`);
  return { all: strip(all.body.node), hidden: strip(hidden.body.node), queue: strip(queue.body.node) };
}

async function newestSnapshot(dataDir: string): Promise<{ index: number; term: number; data: Uint8Array; meta: Uint8Array }> {
  const snap = await new Snapshotter(join(dataDir, "member", "snap")).loadNewest();
  assert.ok(snap, `a snapshot in ${readdirSync(join(dataDir, "member", "snap")).join(",")}`);
  return snap;
}

test("a member restarts from its format-2 snapshot with every kind of v2 node, decoded a line at a time; a format-1 snapshot still loads", async () => {
  const srv = await startServer({ flags: ["--snapshot-count", "100"] });
  after(() => srv.stop());
  const value = "v".repeat(2000);
  await json("PUT", `${srv.url}/v2/keys/empty?dir=true`, {});
  await json("PUT", `${srv.url}/v2/keys/_hidden`, { value: "h" });
  await json("PUT", `${srv.url}/v2/keys/ttl`, { value: "t", ttl: "3600" });
  await json("PUT", `${srv.url}/v2/keys/ttldir?dir=true&ttl=3600`, {});
  for (let i = 0; i < 3; i++) await json("POST", `${srv.url}/v2/keys/queue`, { value: `job${i}` });
  await json("PUT", `${srv.url}/v2/keys/odd`, { value: 'q"u\\o\nte 😀ü' });
  for (let i = 0; i < 300; i++) await json("PUT", `${srv.url}/v2/keys/d${i % 4}/sub${i % 3}/k${i}`, { value: value + i });
  const before = await dump(srv.url);

  await srv.kill("SIGTERM");
  const snap = await newestSnapshot(srv.dataDir);
  const data = Buffer.from(snap.data.buffer, snap.data.byteOffset, snap.data.byteLength);
  assert.deepEqual(data.subarray(0, SNAPSHOT_MAGIC.length), SNAPSHOT_MAGIC, "written in format 2");
  const longestLine = Math.max(...data.toString().split("\n").map((l) => l.length));
  assert.ok(data.length > 200 * longestLine, `${data.length} bytes, lines of at most ${longestLine}`);

  // The member's own bytes through the decoder, every string it makes measured.
  const { result: state, longestString, longestParse } = measureStrings(() => decodeSnapshotData(data));
  assert.ok(longestString <= longestLine && longestParse <= longestLine, `strings ${longestString}, JSON ${longestParse}, line ${longestLine}`);

  await srv.restart();
  assert.deepEqual(await dump(srv.url), before, "format 2: the same store after the restart");

  // An earlier version's data dir: the same snapshot in format 1 loads too.
  await srv.kill("SIGTERM");
  assert.equal((await newestSnapshot(srv.dataDir)).index, snap.index, "no newer snapshot to load instead");
  const { store, ...rest } = state;
  const v1 = Buffer.from(JSON.stringify({ store: V2Store.recover(store).save(), ...rest }));
  assert.equal(v1[0], 0x7b);
  await new Snapshotter(join(srv.dataDir, "member", "snap")).save({ ...snap, data: v1 });
  await srv.restart();
  assert.deepEqual(await dump(srv.url), before, "format 1: the same store after the restart");
  const next = await json<{ node: { modifiedIndex: number } }>("PUT", `${srv.url}/v2/keys/after`, { value: "x" });
  assert.equal(next.status, 201);
});
