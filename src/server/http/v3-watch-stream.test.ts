// The gateway's streams over real HTTP (127.0.0.1, port 0) with a fake backend: watch,
// lease keepalive, snapshot; ordering, IDs, errors, slow readers, disconnects, shutdown.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { V3Errors } from "../../api/v3-errors.ts";
import { call, startV3Server, StreamClient, until, type V3TestServer } from "./v3-test-server.test-helper.ts";
import { DUPLICATE_WATCH_ID, fragments } from "./v3-watch-session.ts";

let s: V3TestServer;
before(async () => {
  s = await startV3Server();
});
after(() => s.close());

const b64 = (t: string): string => Buffer.from(t).toString("base64");
const put = (key: string, value: string): Promise<unknown> => call(s.port, "/v3/kv/put", { key: b64(key), value: b64(value) });

/** A round trip on another connection: by then the server has handled what was already sent. */
const settle = async (): Promise<void> => {
  await call(s.port, "/v3/kv/range", { key: b64("settle") });
};

test("a watch answers created first, then one line per revision, and stays open", async () => {
  const w = new StreamClient(s.port, "/v3/watch");
  w.write({ create_request: { key: b64("w1/a") } });
  w.endBody(); // the client closing its side does not end the stream (etcd)
  await w.waitLines(1);
  assert.equal(w.status, 200);
  assert.equal(w.headers["grpc-metadata-content-type"], "application/grpc");
  await put("w1/a", "1");
  await put("w1/other", "x");
  await call(s.port, "/v3/kv/deleterange", { key: b64("w1/a") });
  await w.waitLines(3);
  const [created, ev1, ev2] = w.results;
  assert.deepEqual(Object.keys(created!), ["header", "created"]);
  assert.deepEqual((ev1!.events as Array<{ kv: { value: string } }>)[0]!.kv.value, b64("1"));
  assert.deepEqual((ev2!.events as Array<{ type: string }>)[0]!.type, "DELETE");
  assert.equal(w.ended, false);
  w.destroy();
});

test("watch IDs: automatic from 0 skipping IDs in use, explicit kept, duplicates refused", async () => {
  const w = new StreamClient(s.port, "/v3/watch");
  w.write({ create_request: { key: b64("w2/a") } });
  w.write({ create_request: { key: b64("w2/b"), watch_id: "1" } });
  w.write({ create_request: { key: b64("w2/c"), watch_id: 1 } });
  w.write('{"create_request":{"key":"' + b64("w2/d") + '"}}');
  await w.waitLines(4);
  const r = w.results;
  assert.equal(r[0]!.watch_id, undefined);
  assert.equal(r[1]!.watch_id, "1");
  assert.deepEqual([r[2]!.watch_id, r[2]!.created, r[2]!.canceled, r[2]!.cancel_reason], ["-1", true, true, DUPLICATE_WATCH_ID]);
  assert.equal(r[3]!.watch_id, "2");
  w.destroy();
});

test("progress_request answers watch_id -1; cancel answers canceled; an unknown cancel answers nothing", async () => {
  const w = new StreamClient(s.port, "/v3/watch");
  w.write({ create_request: { key: b64("w3/a") } });
  w.write({ progress_request: {} });
  w.write({ cancel_request: { watch_id: "5" } });
  w.write({ cancel_request: {} });
  await w.waitLines(3);
  await settle();
  assert.deepEqual(
    w.results.map((r) => [r.watch_id, r.canceled]),
    [
      [undefined, undefined],
      ["-1", undefined],
      [undefined, true],
    ],
  );
  await until(() => s.backend.watchers.size === 0, "the canceled watcher to leave the backend");
  w.destroy();
});

test("an empty request sends nothing at all, not even the head", async () => {
  const w = new StreamClient(s.port, "/v3/watch");
  w.write("{}");
  w.endBody();
  await until(() => s.streams.size > 0, "the stream to be open");
  await settle();
  assert.equal(w.gotResponse, false);
  w.destroy();
});

test("a broken first message fails with 500 code 2; a broken later one just stops the reading", async () => {
  const bad = await call(s.port, "/v3/watch", "xx");
  assert.equal(bad.status, 500);
  assert.equal(bad.text, '{"error":"invalid character \'x\' looking for beginning of value","message":"invalid character \'x\' looking for beginning of value","code":2}');
  assert.equal(bad.headers.trailer, undefined);
  const typed = await call(s.port, "/v3/watch", '{"create_request":{"key":1}}');
  assert.equal(JSON.parse(typed.text).error, "json: cannot unmarshal number into Go value of type []uint8");

  const w = new StreamClient(s.port, "/v3/watch");
  w.write(`{"create_request":{"key":"${b64("w4/a")}"}} xx {"create_request":{}}`);
  await w.waitLines(1);
  await put("w4/a", "1");
  await w.waitLines(2); // the first watcher still delivers
  await settle();
  assert.equal(w.lines.length, 2);
  w.destroy();
});

test("a refused watch answers created+canceled with etcd's reason and does not use up the ID", async () => {
  s.backend.refuseWatch = V3Errors.permissionDenied();
  const w = new StreamClient(s.port, "/v3/watch");
  w.write({ create_request: { key: b64("w5/a") } });
  await w.waitLines(1);
  s.backend.refuseWatch = undefined;
  w.write({ create_request: { key: b64("w5/a") } });
  await w.waitLines(2);
  assert.deepEqual(w.results[0], {
    header: w.results[0]!.header,
    watch_id: "-1",
    created: true,
    canceled: true,
    cancel_reason: "rpc error: code = PermissionDenied desc = etcdserver: permission denied",
  });
  assert.equal(w.results[1]!.watch_id, undefined);
  w.destroy();
});

test("history replayed during registration comes after created; a compacted start is canceled", async () => {
  await put("w6/a", "1");
  await put("w6/a", "2");
  const first = s.backend.history.find((h) => h.events.some((e) => e.kv.key.toString() === "w6/a"))!.revision;
  const w = new StreamClient(s.port, "/v3/watch");
  w.write({ create_request: { key: b64("w6/a"), start_revision: String(first) } });
  await w.waitLines(3);
  assert.equal(w.results[0]!.created, true);
  assert.deepEqual(
    w.results.slice(1).map((r) => (r.events as Array<{ kv: { value: string } }>)[0]!.kv.value),
    [b64("1"), b64("2")],
  );
  await call(s.port, "/v3/kv/compaction", { revision: String(first + 1) });
  w.write({ create_request: { key: b64("w6/a"), start_revision: String(first) } });
  await w.waitLines(5);
  const c = w.results[4]!;
  assert.deepEqual([c.watch_id, c.canceled, c.compact_revision], ["1", true, String(first + 1)]);
  assert.equal((c.header as { revision?: string }).revision, undefined);
  w.destroy();
});

test("a client that disconnects loses its watchers", async () => {
  await until(() => s.backend.watchers.size === 0, "earlier streams to be cleaned up");
  const before = s.backend.watchers.size;
  const w = new StreamClient(s.port, "/v3/watch");
  w.write({ create_request: { key: b64("w7/a") } });
  w.write({ create_request: { key: b64("w7/b") } });
  await w.waitLines(2);
  assert.equal(s.backend.watchers.size, before + 2);
  w.destroy();
  await until(() => s.backend.watchers.size === before, "the watchers to be canceled");
});

test("shutdown ends open streams through the streams set, and their watchers go", async () => {
  const w = new StreamClient(s.port, "/v3/watch");
  w.write({ create_request: { key: b64("w8/a") } });
  await w.waitLines(1);
  for (const res of s.streams) res.end();
  await until(() => w.ended, "the stream to end");
  await until(() => s.backend.watchers.size === 0, "the watchers to be canceled");
});

test("a slow reader's watcher pauses past the limit, its buffer stays bounded, and once read it gets every event in order", async () => {
  const limit = 256 * 1024;
  const slow = await startV3Server({ streamBufferBytes: limit });
  after(() => slow.close());
  const w = new StreamClient(slow.port, "/v3/watch", { paused: true });
  w.write({ create_request: { key: b64("big") } });
  await until(() => w.gotResponse, "the head");
  const value = Buffer.alloc(64 * 1024, 0x61).toString("base64");
  const watcher = (): { paused: boolean } | undefined => [...slow.backend.watchers.values()][0];
  // Kernel buffers take the first megabytes; the watcher pauses once the rest piles up.
  let puts = 0;
  while (puts < 400 && watcher()?.paused !== true) {
    await call(slow.port, "/v3/kv/put", { key: b64("big"), value });
    puts++;
  }
  assert.equal(watcher()?.paused, true, "the slow watcher paused");
  for (let i = 0; i < 20; i++, puts++) await call(slow.port, "/v3/kv/put", { key: b64("big"), value });
  const res = [...slow.streams][0]!;
  assert.ok(res.writableLength <= limit + 128 * 1024, `${res.writableLength} bytes unsent`);
  assert.equal(slow.backend.watchers.size, 1, "not canceled");
  w.resume();
  const revisions = (): number[] => w.results.flatMap((r) => ((r.events ?? []) as Array<{ kv: { mod_revision: string } }>).map((e) => Number(e.kv.mod_revision)));
  await until(() => revisions().length >= puts, "every event", 20_000);
  const first = revisions()[0]!;
  assert.deepEqual(revisions(), Array.from({ length: puts }, (_, i) => first + i));
  assert.ok(w.results.every((r) => r.canceled !== true));
  w.destroy();
});

test("a slow reader whose next revision was compacted while it was paused gets compact_revision", async () => {
  const slow = await startV3Server({ streamBufferBytes: 64 * 1024 });
  after(() => slow.close());
  const w = new StreamClient(slow.port, "/v3/watch", { paused: true });
  w.write({ create_request: { key: b64("huge") } });
  await until(() => w.gotResponse, "the head");
  const value = Buffer.alloc(128 * 1024, 0x62).toString("base64");
  const watcher = (): { paused: boolean } | undefined => [...slow.backend.watchers.values()][0];
  for (let i = 0; i < 200 && watcher()?.paused !== true; i++) await call(slow.port, "/v3/kv/put", { key: b64("huge"), value });
  assert.equal(watcher()?.paused, true);
  await call(slow.port, "/v3/kv/put", { key: b64("huge"), value });
  // Compacted past the revision it paused at (the last put but one).
  slow.backend.compactRevision = slow.backend.revision;
  w.resume();
  await until(() => w.results.some((r) => r.canceled === true), "the compacted answer", 10_000);
  const last = w.results.at(-1)!;
  assert.equal(last.compact_revision, String(slow.backend.revision));
  assert.equal(slow.backend.watchers.size, 0);
});

test("fragments splits a large response at the limit, all parts but the last flagged", () => {
  const ev = (n: number) => ({ type: 0 as const, kv: { key: Buffer.from("k"), value: Buffer.alloc(n), createRevision: 1, modRevision: 1, version: 1, lease: 0n } });
  assert.deepEqual(fragments([ev(10), ev(10)], 1000, 40).map((p) => p.events.length), [2]);
  const parts = fragments([ev(400), ev(400), ev(400), ev(2000)], 1000, 40);
  assert.deepEqual(
    parts.map((p) => [p.events.length, p.more]),
    [
      [2, true],
      [1, true],
      [1, false],
    ],
  );
});

test("a watcher asking for fragments gets big revisions split", async () => {
  // The txn's raft request (~500 bytes) fits the limit; the watch response (~540) does not.
  const small = await startV3Server({ maxRequestBytes: 520 });
  after(() => small.close());
  const w = new StreamClient(small.port, "/v3/watch");
  w.write({ create_request: { key: b64("f/"), range_end: b64("f0"), fragment: true } });
  await w.waitLines(1);
  const v = b64("x".repeat(150));
  await call(small.port, "/v3/kv/txn", { success: ["a", "b", "c"].map((k) => ({ request_put: { key: b64(`f/${k}`), value: v } })) });
  await w.waitLines(3);
  assert.deepEqual(
    w.results.slice(1).map((r) => [(r.events as unknown[]).length, r.fragment ?? false]),
    [
      [2, true],
      [1, false],
    ],
  );
  w.destroy();
});

test("keepalive answers one line per message, then ends with the body", async () => {
  await call(s.port, "/v3/lease/grant", { TTL: 60, ID: "99" });
  const k = new StreamClient(s.port, "/v3/lease/keepalive");
  k.write({ ID: "99" });
  k.write('{"ID":"5"}{}');
  k.endBody();
  await until(() => k.ended, "the keepalive stream to end");
  assert.equal(k.headers["grpc-metadata-content-type"], "application/grpc");
  assert.deepEqual(
    k.results.map((r) => [r.ID, r.TTL]),
    [
      ["99", "60"],
      ["5", undefined],
      [undefined, undefined],
    ],
  );
});

test("keepalive: an empty body ends at once without gRPC metadata; a broken first message is 500 code 2", async () => {
  const empty = await call(s.port, "/v3/lease/keepalive", "");
  assert.deepEqual([empty.status, empty.text, empty.headers["grpc-metadata-content-type"]], [200, "", undefined]);
  const bad = await call(s.port, "/v3/lease/keepalive", "bad");
  assert.deepEqual([bad.status, JSON.parse(bad.text).code], [500, 2]);
  const later = await call(s.port, "/v3/lease/keepalive", '{"ID":"99"} bad');
  assert.equal(later.status, 200);
  assert.equal(later.text.trim().split("\n").length, 1);
});

test("keepalive: a backend error ends the stream with grpc-gateway's error chunk", async () => {
  const k = new StreamClient(s.port, "/v3/lease/keepalive");
  k.write({ ID: "99" });
  await k.waitLines(1);
  s.backend.failNext = V3Errors.noLeader();
  k.write({ ID: "99" });
  await until(() => k.ended, "the stream to end");
  assert.deepEqual(JSON.parse(k.lines[1]!), { error: { grpc_code: 14, http_code: 503, message: "etcdserver: no leader", http_status: "Service Unavailable" } });
});

test("snapshot streams 32 KiB blobs with the bytes remaining, then the sha256", async () => {
  const image = Buffer.alloc(80 * 1024, 7);
  s.backend.snapshotImage = image;
  const r = await call(s.port, "/v3/maintenance/snapshot", {});
  const lines = r.text.trim().split("\n").map((l) => (JSON.parse(l) as { result: { remaining_bytes?: string; blob: string } }).result);
  assert.deepEqual(
    lines.map((l) => [l.remaining_bytes, Buffer.from(l.blob, "base64").length]),
    [
      [String(48 * 1024), 32 * 1024],
      [String(16 * 1024), 32 * 1024],
      [undefined, 16 * 1024],
      [undefined, 32],
    ],
  );
  assert.equal(lines[3]!.blob, createHash("sha256").update(image).digest("base64"));
});
