// The v3 watch families (etcd_debugging_mvcc_watch_stream_total, watcher_total,
// events_total, pending_events_total, slow_watcher_total) and the v2 store's
// etcd_debugging_store_reads_total after a known sequence. The expected values were taken
// from etcd 3.4.23 (`etcd --enable-v2=true`, one member) given the same requests: run this
// file with KVCTL_TEST_SERVER=etcd to see them again. A gRPC stream (raw HTTP/2) and a
// gateway stream (POST /v3/watch) each count as a watch stream; a watcher whose start
// revision was compacted counts until it is canceled; events count once each as they reach
// a client; gets count failed ones too, a recursive one under getRecursive (a quorum GET
// and a HEAD are gets).
import { test, after } from "node:test";
import assert from "node:assert/strict";
import http2 from "node:http2";
import { grpcUnary } from "../helpers/grpc.ts";
import { startServer } from "../helpers/server.ts";
import { agent, gatewayPost, gatewayWatch, http as httpReq, until } from "../helpers/http.ts";
import { parseExposition } from "../helpers/prometheus.ts";

after(() => agent.destroy());

const againstEtcd = process.env["KVCTL_TEST_SERVER"] === "etcd";
const b64 = (s: string): string => Buffer.from(s).toString("base64");

async function values(url: string): Promise<Map<string, number>> {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  const out = new Map<string, number>();
  for (const [name, fam] of parseExposition(await res.text())) {
    if (!name.startsWith("etcd_debugging_mvcc_") && name !== "etcd_debugging_store_reads_total") continue;
    for (const s of fam.samples) out.set(s.labels["action"] === undefined ? s.name : `${s.name}{${s.labels["action"]}}`, s.value);
  }
  return out;
}

function watchFamilies(v: Map<string, number>): Record<string, number | undefined> {
  return {
    streams: v.get("etcd_debugging_mvcc_watch_stream_total"),
    watchers: v.get("etcd_debugging_mvcc_watcher_total"),
    slow: v.get("etcd_debugging_mvcc_slow_watcher_total"),
    pending: v.get("etcd_debugging_mvcc_pending_events_total"),
    events: v.get("etcd_debugging_mvcc_events_total"),
  };
}

// --- protobuf, only what a WatchRequest / WatchResponse needs -------------------------

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

function field(no: number, bytes: number[] | Buffer): number[] {
  return [...varint((no << 3) | 2), ...varint(bytes.length), ...bytes];
}

function varintField(no: number, n: number): number[] {
  return [...varint(no << 3), ...varint(n)];
}

/** WatchRequest{create_request{key, start_revision}} or {cancel_request{watch_id}}. */
function createRequest(key: string, startRevision = 0): Buffer {
  const create = [...field(1, Buffer.from(key)), ...(startRevision > 0 ? varintField(3, startRevision) : [])];
  return Buffer.from(field(1, create));
}

function cancelRequest(watchId: number): Buffer {
  return Buffer.from(field(2, varintField(1, watchId)));
}

interface WatchResponse {
  watchId: number;
  created: boolean;
  canceled: boolean;
  events: number;
}

function decodeResponse(b: Buffer): WatchResponse {
  const r: WatchResponse = { watchId: 0, created: false, canceled: false, events: 0 };
  let i = 0;
  const readVarint = (): number => {
    let n = 0;
    let mul = 1;
    for (;;) {
      const byte = b[i++]!;
      n += (byte & 0x7f) * mul;
      if ((byte & 0x80) === 0) return n;
      mul *= 128;
    }
  };
  while (i < b.length) {
    const tag = readVarint();
    const no = tag >> 3;
    if ((tag & 7) === 0) {
      const v = readVarint();
      if (no === 2) r.watchId = v;
      if (no === 3) r.created = v === 1;
      if (no === 4) r.canceled = v === 1;
    } else {
      const len = readVarint();
      if (no === 11) r.events++;
      i += len;
    }
  }
  return r;
}

/** A gRPC Watch stream over HTTP/2: requests framed in, responses decoded. */
function grpcWatch(url: string, headers: http2.OutgoingHttpHeaders = {}): { responses: WatchResponse[]; send(msg: Buffer): void; close(): void } {
  const session = http2.connect(url);
  session.on("error", () => undefined);
  const stream = session.request({ ":method": "POST", ":path": "/etcdserverpb.Watch/Watch", "content-type": "application/grpc", te: "trailers", ...headers });
  stream.on("error", () => undefined);
  const responses: WatchResponse[] = [];
  let buf = Buffer.alloc(0);
  stream.on("data", (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
      const len = buf.readUInt32BE(1);
      responses.push(decodeResponse(buf.subarray(5, 5 + len)));
      buf = buf.subarray(5 + len);
    }
  });
  return {
    responses,
    send(msg) {
      const head = Buffer.alloc(5);
      head.writeUInt32BE(msg.length, 1);
      stream.write(Buffer.concat([head, msg]));
    },
    close() {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      session.close();
    },
  };
}


const gatewayEvents = (results: Array<Record<string, unknown>>): number =>
  results.reduce((n, r) => n + (Array.isArray(r["events"]) ? r["events"].length : 0), 0);

test("v3 watch families: streams of both transports, watchers (a compacted one until canceled), events as they reach clients", { timeout: 60_000 }, async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const scrape = async (): Promise<Record<string, number | undefined>> => watchFamilies(await values(srv.url));
  assert.deepEqual(await scrape(), { streams: 0, watchers: 0, slow: 0, pending: 0, events: 0 });

  const g = grpcWatch(srv.url);
  after(() => g.close());
  g.send(createRequest("w"));
  await until(() => g.responses.some((r) => r.created), 5000, "gRPC watch created");
  const gw = gatewayWatch(srv.url, { key: b64("w") });
  after(() => gw.close());
  await until(() => gw.results.some((r) => r["created"] === true), 5000, "gateway watch created");
  assert.deepEqual(await scrape(), { streams: 2, watchers: 2, slow: 0, pending: 0, events: 0 });

  await gatewayPost(srv.url, "/v3/kv/put", { key: b64("w"), value: b64("1") });
  await gatewayPost(srv.url, "/v3/kv/put", { key: b64("w"), value: b64("2") });
  await gatewayPost(srv.url, "/v3/kv/put", { key: b64("other"), value: b64("x") });
  const del = await gatewayPost(srv.url, "/v3/kv/deleterange", { key: b64("w") });
  await until(() => gatewayEvents(gw.results) === 3 && g.responses.reduce((n, r) => n + r.events, 0) === 3, 5000, "3 events on each stream");
  // Each stream's watcher got 3 events (two puts and the delete; "other" matches none).
  await until(async () => (await scrape())["events"] === 6, 5000, "events_total 6");
  assert.deepEqual(await scrape(), { streams: 2, watchers: 2, slow: 0, pending: 0, events: 6 });

  // A watcher from a compacted revision is answered canceled and still counts, as etcd's,
  // until its stream cancels it.
  const rev = Number((del["header"] as { revision: string }).revision);
  await gatewayPost(srv.url, "/v3/kv/compaction", { revision: String(rev), physical: true });
  g.send(createRequest("w", 1));
  await until(() => g.responses.some((r) => r.canceled && r.watchId === 1), 5000, "compacted watcher canceled");
  await until(async () => (await scrape())["watchers"] === 3, 5000, "the compacted watcher counted");
  g.send(cancelRequest(1));
  await until(async () => (await scrape())["watchers"] === 2, 5000, "the compacted watcher canceled");

  gw.close();
  await until(async () => (await scrape())["streams"] === 1, 5000, "gateway stream closed");
  assert.deepEqual(await scrape(), { streams: 1, watchers: 1, slow: 0, pending: 0, events: 6 });
  g.close();
  await until(async () => (await scrape())["streams"] === 0, 5000, "gRPC stream closed");
  assert.deepEqual(await scrape(), { streams: 0, watchers: 0, slow: 0, pending: 0, events: 6 });
});

test("etcd_debugging_store_reads_total: gets and recursive gets, failed ones included", { timeout: 30_000 }, async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const reads = async (): Promise<Record<string, number | undefined>> => {
    const v = await values(srv.url);
    return { get: v.get("etcd_debugging_store_reads_total{get}"), getRecursive: v.get("etcd_debugging_store_reads_total{getRecursive}") };
  };
  // etcd also counts its own reads of the state it keeps in the v2 store: every v2 keys
  // request reads /2/enabled (v2 auth), every /health is a QGET of "/" applied by every
  // member, a conf change's validation reads the members recursively. kvctl keeps those
  // elsewhere (auth state, ReadIndex health check, membership) and reads no store there, so
  // it counts the gets clients asked for: the moves from a start taken after /health, and
  // etcd's one more per v2 request when this file runs against it.
  const base = await reads();
  const k = `${srv.url}/v2/keys`;
  const expect = async (method: string, target: string, status: number, form?: Record<string, string>): Promise<void> => {
    const r = await httpReq(method, target, form);
    assert.equal(r.status, status, `${method} ${target}: ${r.body}`);
  };
  await expect("PUT", `${k}/r/a`, 201, { value: "1" });
  await expect("GET", `${k}/r/a`, 200);
  await expect("GET", `${k}/r/missing`, 404);
  await expect("GET", `${k}/r?recursive=true`, 200);
  await expect("GET", `${k}/none?recursive=true`, 404);
  await expect("GET", `${k}/r/a?quorum=true`, 200);
  await expect("HEAD", `${k}/r/a`, 200);
  await expect("GET", `${k}/r`, 200);
  const now = await reads();
  assert.deepEqual({ get: (now.get ?? 0) - (base.get ?? 0), getRecursive: (now.getRecursive ?? 0) - (base.getRecursive ?? 0) }, { get: 5 + (againstEtcd ? 8 : 0), getRecursive: 2 });
});

test("compaction and defragmentation: keys deleted, a total per compaction, a defrag observed and no longer in flight", { timeout: 30_000 }, async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const read = async (): Promise<Record<string, number | undefined>> => {
    const res = await fetch(`${srv.url}/metrics`);
    const f = parseExposition(await res.text());
    const v = (name: string, sample = name): number | undefined => f.get(name)?.samples.find((s) => s.name === sample)?.value;
    return {
      keys: v("etcd_debugging_mvcc_db_compaction_keys_total"),
      totals: v("etcd_debugging_mvcc_db_compaction_total_duration_milliseconds", "etcd_debugging_mvcc_db_compaction_total_duration_milliseconds_count"),
      pauses: v("etcd_debugging_mvcc_db_compaction_pause_duration_milliseconds", "etcd_debugging_mvcc_db_compaction_pause_duration_milliseconds_count"),
      defrags: v("etcd_disk_backend_defrag_duration_seconds", "etcd_disk_backend_defrag_duration_seconds_count"),
      inflight: v("etcd_disk_defrag_inflight"),
    };
  };
  assert.deepEqual(await read(), { keys: 0, totals: 0, pauses: 0, defrags: 0, inflight: 0 });
  for (const v of ["1", "2", "3"]) await gatewayPost(srv.url, "/v3/kv/put", { key: b64("c"), value: b64(v) });
  const last = await gatewayPost(srv.url, "/v3/kv/put", { key: b64("d"), value: b64("1") });
  const rev = (last["header"] as { revision: string }).revision;
  await gatewayPost(srv.url, "/v3/kv/compaction", { revision: rev, physical: true });
  // c's first two revisions go; its last and d's stay. One batch: a total, no pause.
  await until(async () => (await read())["totals"] === 1, 5000, "the compaction's total observed");
  assert.deepEqual(await read(), { keys: 2, totals: 1, pauses: 0, defrags: 0, inflight: 0 });
  await gatewayPost(srv.url, "/v3/maintenance/defragment", {});
  assert.deepEqual(await read(), { keys: 2, totals: 1, pauses: 0, defrags: 1, inflight: 0 });
});

test("hash durations: one per Hash call (gRPC or gateway), one per HashKV answered, none for a compacted revision", { timeout: 30_000 }, async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const endpoint = new URL(srv.url).host;
  const counts = async (): Promise<number[]> => {
    const f = parseExposition(await (await fetch(`${srv.url}/metrics`)).text());
    const n = (name: string): number | undefined => f.get(name)?.samples.find((s) => s.name === `${name}_count`)?.value;
    return [n("etcd_mvcc_hash_duration_seconds") ?? -1, n("etcd_mvcc_hash_rev_duration_seconds") ?? -1];
  };
  assert.deepEqual(await counts(), [0, 0]);
  assert.equal((await grpcUnary(endpoint, "/etcdserverpb.Maintenance/Hash", [])).status, "0");
  await gatewayPost(srv.url, "/v3/maintenance/hash", {});
  assert.equal((await grpcUnary(endpoint, "/etcdserverpb.Maintenance/HashKV", [])).status, "0");
  for (const v of ["1", "2"]) await gatewayPost(srv.url, "/v3/kv/put", { key: b64("h"), value: b64(v) });
  const rev = Number(((await gatewayPost(srv.url, "/v3/kv/put", { key: b64("h"), value: b64("3") }))["header"] as { revision: string }).revision);
  await gatewayPost(srv.url, "/v3/kv/compaction", { revision: String(rev - 1), physical: true });
  // HashKV at a compacted revision: OutOfRange (11), not observed.
  assert.equal((await grpcUnary(endpoint, "/etcdserverpb.Maintenance/HashKV", varintField(1, rev - 2))).status, "11");
  assert.equal((await grpcUnary(endpoint, "/etcdserverpb.Maintenance/HashKV", varintField(1, rev))).status, "0");
  assert.deepEqual(await counts(), [2, 2]);
});

test("etcd_server_client_requests_total: gRPC calls by their client-api-version, gateway calls as etcd's gateway makes them, not /health nor v2", { timeout: 30_000 }, async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const endpoint = new URL(srv.url).host;
  const counts = async (): Promise<Record<string, number>> => {
    const f = parseExposition(await (await fetch(`${srv.url}/metrics`)).text());
    const out: Record<string, number> = {};
    for (const x of f.get("etcd_server_client_requests_total")?.samples ?? []) out[`${x.labels["type"]}/${x.labels["client_api_version"]}`] = x.value;
    return out;
  };
  const v34 = { "client-api-version": "3.4" };
  const rangeA = field(1, Buffer.from("a"));
  // gRPC: unary calls, one refused by v3rpc's checks (an empty key: counted), one whose
  // message does not decode (grpc-go refuses it before the interceptors: not counted).
  assert.equal((await grpcUnary(endpoint, "/etcdserverpb.KV/Range", rangeA, v34)).status, "0");
  assert.equal((await grpcUnary(endpoint, "/etcdserverpb.KV/Range", [], v34)).status, "3");
  assert.equal((await grpcUnary(endpoint, "/etcdserverpb.Maintenance/Status", [])).status, "0");
  assert.equal((await grpcUnary(endpoint, "/etcdserverpb.KV/Range", [0x0a, 0x05], v34)).status, "13");
  const g = grpcWatch(srv.url, v34);
  after(() => g.close());
  g.send(createRequest("a"));
  await until(() => g.responses.some((r) => r.created), 5000, "gRPC watch created");

  // The gateway: a put, one with the version header, a refused range (counted), bodies it
  // cannot decode (not counted), a watch stream.
  await gatewayPost(srv.url, "/v3/kv/put", { key: b64("a"), value: b64("1") });
  const versioned = await fetch(`${srv.url}/v3/kv/put`, { method: "POST", headers: { "Grpc-Metadata-Client-Api-Version": "9.9" }, body: JSON.stringify({ key: b64("a"), value: b64("2") }) });
  assert.equal(versioned.status, 200);
  assert.equal((await fetch(`${srv.url}/v3/kv/range`, { method: "POST", body: "{}" })).status, 400);
  assert.equal((await fetch(`${srv.url}/v3/kv/put`, { method: "POST", body: '{"key":' })).status, 400);
  assert.equal((await fetch(`${srv.url}/v3/kv/put`, { method: "POST", body: '{"key":"!!"}' })).status, 400);
  const gw = gatewayWatch(srv.url, { key: b64("a") });
  after(() => gw.close());
  await until(() => gw.results.some((r) => r["created"] === true), 5000, "gateway watch created");
  // Neither /health nor the v2 API is a gRPC call.
  assert.equal((await fetch(`${srv.url}/health`)).status, 200);
  assert.equal((await httpReq("GET", `${srv.url}/v2/keys/x`)).status, 404);

  assert.deepEqual(await counts(), { "unary/3.4": 2, "unary/unknown": 3, "unary/9.9": 1, "stream/3.4": 1, "stream/unknown": 1 });
});
