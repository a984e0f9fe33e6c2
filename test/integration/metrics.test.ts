// Prometheus metrics end to end: kvctl's /metrics parsed with a small text-format
// parser, its families checked against the names, types and labels etcd 3.4.23 exposes
// (fixtures/etcd-3.4-metric-families.txt, recorded from a real etcd), and the counters
// checked to move with the work done.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, repoRoot, startServer } from "../helpers/server.ts";
import { startCluster } from "../helpers/cluster.ts";
import { runEtcdctl } from "../helpers/etcd.ts";
import { agent, http } from "../helpers/http.ts";
import { until } from "../helpers/http.ts";
import { parseExposition, type ParsedFamily } from "../helpers/prometheus.ts";

after(() => agent.destroy());

interface EtcdFamily {
  type: string;
  labels: string[];
}

const etcdFamilies = new Map<string, EtcdFamily>(
  readFileSync(join(repoRoot, "test/integration/fixtures/etcd-3.4-metric-families.txt"), "utf8")
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const [name = "", type = "", labels = "-"] = l.split(" ");
      return [name, { type, labels: labels === "-" ? [] : labels.split(",") }];
    }),
);

/** What etcd's Grafana dashboard and the etcd-mixin alerts read, plus the process collector. */
const REQUIRED = [
  "etcd_server_has_leader",
  "etcd_server_leader_changes_seen_total",
  "etcd_server_proposals_committed_total",
  "etcd_server_proposals_applied_total",
  "etcd_server_proposals_pending",
  "etcd_server_proposals_failed_total",
  "etcd_disk_wal_fsync_duration_seconds",
  "etcd_disk_backend_commit_duration_seconds",
  "etcd_mvcc_db_total_size_in_bytes",
  "etcd_mvcc_db_total_size_in_use_in_bytes",
  "etcd_debugging_mvcc_db_total_size_in_bytes",
  "etcd_server_quota_backend_bytes",
  "etcd_debugging_mvcc_keys_total",
  "etcd_mvcc_put_total",
  "etcd_mvcc_range_total",
  "etcd_mvcc_delete_total",
  "etcd_mvcc_txn_total",
  "etcd_network_client_grpc_sent_bytes_total",
  "etcd_network_client_grpc_received_bytes_total",
  "etcd_server_slow_apply_total",
  "etcd_server_heartbeat_send_failures_total",
  "etcd_server_health_success",
  "etcd_server_health_failures",
  "grpc_server_handled_total",
  "grpc_server_started_total",
  "process_cpu_seconds_total",
  "process_resident_memory_bytes",
  "process_open_fds",
  "process_max_fds",
  "process_start_time_seconds",
  "process_virtual_memory_bytes",
];
/** Present once a member has peers (a real etcd of one member shows none of them either). */
const PEER_FAMILIES = ["etcd_network_peer_round_trip_time_seconds", "etcd_network_peer_sent_bytes_total", "etcd_network_peer_received_bytes_total"];

async function scrape(url: string): Promise<Map<string, ParsedFamily>> {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  return parseExposition(await res.text());
}

/** The value of a family's sample named `name` (default: the family) whose labels include `labels`. */
function value(families: Map<string, ParsedFamily>, family: string, labels: Record<string, string> = {}, name = family): number {
  const f = families.get(family);
  assert.ok(f !== undefined, `${family} is exposed`);
  const s = f.samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  assert.ok(s !== undefined, `${name}${JSON.stringify(labels)} is exposed`);
  return s.value;
}

function checkAgainstEtcd(families: Map<string, ParsedFamily>): void {
  for (const [name, f] of families) {
    const etcd = etcdFamilies.get(name);
    assert.ok(etcd !== undefined, `${name} is one of etcd 3.4's metric names`);
    assert.equal(f.type, etcd.type, `${name}: etcd's type`);
    assert.deepEqual([...f.labelNames].sort(), etcd.labels, `${name}: etcd's label names`);
    assert.notEqual(f.help, "", `${name} has a HELP line`);
  }
}

const b64 = (s: string): string => Buffer.from(s).toString("base64");
async function v3(url: string, path: string, body: object): Promise<void> {
  const res = await fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body) });
  assert.equal(res.status, 200, `${path}: ${await res.text()}`);
}

test("one member: etcd's families, names, types and labels; counters move with writes; metrics URL, /health, /debug/vars", async () => {
  const metricsUrl = `http://127.0.0.1:${await freePort()}`;
  const srv = await startServer({ flags: ["--listen-metrics-urls", metricsUrl] });
  after(() => srv.stop());

  const before = await scrape(srv.url);
  checkAgainstEtcd(before);
  for (const name of REQUIRED) assert.ok(before.has(name), `${name} is exposed`);
  assert.equal(value(before, "etcd_server_has_leader"), 1);
  assert.ok(value(before, "etcd_server_leader_changes_seen_total") >= 1);
  assert.equal(value(before, "etcd_server_quota_backend_bytes"), 2 * 1024 ** 3);
  assert.ok(value(before, "etcd_mvcc_db_total_size_in_bytes") > 0);
  assert.ok(value(before, "process_resident_memory_bytes") > 10e6);
  assert.ok(Math.abs(value(before, "process_start_time_seconds") - Date.now() / 1000) < 120);
  // Every method and code starts at 0, as go-grpc-prometheus initializes them.
  const rangeOk = { grpc_code: "OK", grpc_method: "Range", grpc_service: "etcdserverpb.KV", grpc_type: "unary" };
  assert.equal(value(before, "grpc_server_handled_total", { ...rangeOk, grpc_code: "Aborted" }), 0);
  assert.equal(value(before, "grpc_server_started_total", { grpc_method: "Watch", grpc_service: "etcdserverpb.Watch", grpc_type: "bidi_stream" }), 0);

  // The work: v2 writes, v3 puts, a range, a txn, a delete, a /health check.
  for (let i = 0; i < 20; i++) assert.equal((await http("PUT", `${srv.url}/v2/keys/m/k${i}`, { value: "v" })).status, 201);
  for (let i = 0; i < 10; i++) await v3(srv.url, "/v3/kv/put", { key: b64(`k${i}`), value: b64("x".repeat(1000)) });
  await v3(srv.url, "/v3/kv/range", { key: b64("k1") });
  await v3(srv.url, "/v3/kv/txn", { success: [{ request_put: { key: b64("t"), value: b64("1") } }, { request_range: { key: b64("k1") } }] });
  await v3(srv.url, "/v3/kv/deleterange", { key: b64("k9") });
  assert.equal((await fetch(`${srv.url}/health`)).status, 200);

  const after1 = await scrape(srv.url);
  checkAgainstEtcd(after1);
  const delta = (name: string, labels: Record<string, string> = {}, sample = name): number => value(after1, name, labels, sample) - value(before, name, labels, sample);
  assert.ok(delta("etcd_server_proposals_committed_total") >= 32, "committed index moved by the 32 writes at least");
  assert.ok(delta("etcd_server_proposals_applied_total") >= 32);
  assert.equal(value(after1, "etcd_server_proposals_pending"), 0);
  assert.equal(delta("etcd_server_proposals_failed_total"), 0);
  assert.ok(delta("etcd_disk_wal_fsync_duration_seconds", {}, "etcd_disk_wal_fsync_duration_seconds_count") >= 32, "one fsync per acknowledged write at least");
  assert.ok(delta("etcd_disk_wal_fsync_duration_seconds", {}, "etcd_disk_wal_fsync_duration_seconds_sum") > 0);
  // The ten 1,000-byte values went into the WAL's records, with the rest of the writes.
  assert.ok(delta("etcd_disk_wal_write_bytes_total") >= 10_000, `WAL bytes moved by ${delta("etcd_disk_wal_write_bytes_total")}`);
  // The backend commits after the write is acknowledged (its data is safe in the WAL), as etcd's batch does.
  const commits = async (): Promise<number> => value(await scrape(srv.url), "etcd_disk_backend_commit_duration_seconds", {}, "etcd_disk_backend_commit_duration_seconds_count");
  const commitsBefore = value(before, "etcd_disk_backend_commit_duration_seconds", {}, "etcd_disk_backend_commit_duration_seconds_count");
  await until(async () => (await commits()) - commitsBefore >= 12, 5000, "a backend commit for each v3 write");
  assert.equal(delta("etcd_mvcc_put_total"), 11, "10 puts and the txn's put");
  assert.equal(delta("etcd_debugging_mvcc_put_total"), 11);
  assert.equal(delta("etcd_mvcc_range_total"), 2, "the range and the txn's range");
  assert.equal(delta("etcd_mvcc_txn_total"), 1);
  assert.equal(delta("etcd_mvcc_delete_total"), 1);
  assert.equal(value(after1, "etcd_debugging_mvcc_keys_total"), 10, "k0..k8 and t");
  assert.equal(value(after1, "etcd_debugging_store_writes_total", { action: "set" }), 20);
  assert.equal(delta("etcd_server_health_success"), 1);
  assert.ok(value(after1, "etcd_mvcc_db_total_size_in_use_in_bytes") > 0);
  assert.ok(value(after1, "etcd_mvcc_db_total_size_in_use_in_bytes") <= value(after1, "etcd_mvcc_db_total_size_in_bytes"));

  // gRPC calls (etcdctl), when the reference client is installed.
  if (existsSync("/usr/bin/etcdctl")) {
    const put = await runEtcdctl(srv.url, ["put", "g", "1"]);
    assert.equal(put.code, 0, put.stderr);
    const bad = await runEtcdctl(srv.url, ["lease", "revoke", "1234"]);
    assert.notEqual(bad.code, 0);
    const g = await scrape(srv.url);
    const putOk = { grpc_code: "OK", grpc_method: "Put", grpc_service: "etcdserverpb.KV", grpc_type: "unary" };
    assert.equal(value(g, "grpc_server_handled_total", putOk) - value(after1, "grpc_server_handled_total", putOk), 1);
    assert.equal(value(g, "grpc_server_started_total", { grpc_method: "Put", grpc_service: "etcdserverpb.KV", grpc_type: "unary" }), 1);
    assert.equal(value(g, "grpc_server_handled_total", { grpc_code: "NotFound", grpc_method: "LeaseRevoke" }), 1);
    assert.ok(value(g, "etcd_network_client_grpc_received_bytes_total") > 0);
    assert.ok(value(g, "etcd_network_client_grpc_sent_bytes_total") > 0);
  }

  // A lease left to expire: the leader revokes it and counts it; its TTL is in the histogram.
  assert.equal(value(after1, "etcd_debugging_server_lease_expired_total"), 0);
  await v3(srv.url, "/v3/lease/grant", { TTL: 2 });
  await until(async () => value(await scrape(srv.url), "etcd_debugging_server_lease_expired_total") === 1, 10_000, "the expired lease counted");
  const leased = await scrape(srv.url);
  assert.equal(value(leased, "etcd_debugging_lease_ttl_total", {}, "etcd_debugging_lease_ttl_total_sum"), 2);
  assert.equal(value(leased, "etcd_debugging_lease_revoked_total"), 1);

  // --listen-metrics-urls: /metrics and /health, nothing else.
  const viaMetricsUrl = await scrape(metricsUrl);
  assert.equal(value(viaMetricsUrl, "etcd_server_has_leader"), 1);
  const health = await fetch(`${metricsUrl}/health`);
  assert.equal(health.status, 200);
  assert.deepEqual(await health.json(), { health: "true" });
  assert.equal((await fetch(`${metricsUrl}/v2/keys`)).status, 404);

  // /health answers with etcd's headers.
  const h = await fetch(`${srv.url}/health`);
  assert.equal(h.headers.get("content-type"), "text/plain; charset=utf-8");
  assert.equal(h.headers.get("access-control-allow-origin"), "*");

  // /debug/vars: etcd's expvar page.
  const vars = await fetch(`${srv.url}/debug/vars`);
  assert.equal(vars.headers.get("content-type"), "application/json; charset=utf-8");
  const body = (await vars.json()) as { cmdline: string[]; memstats: Record<string, number>; "raft.status": Record<string, unknown>; file_descriptor_limit: number };
  assert.ok(body.cmdline.includes("serve"));
  assert.ok(body.memstats["HeapAlloc"]! > 0);
  assert.ok(body.file_descriptor_limit > 0);
  assert.equal(body["raft.status"]["raftState"], "StateLeader");
  assert.equal(body["raft.status"]["lead"], body["raft.status"]["id"]);
  assert.ok((body["raft.status"]["applied"] as number) >= 32);
  assert.ok(Object.keys(body["raft.status"]["progress"] as object).length === 1);
});

test("two members: peer traffic by member id, heartbeat round trips on the leader, leader seen by both", async () => {
  const c = await startCluster(2);
  after(() => c.stop());
  const leader = await c.leader();
  assert.ok(leader !== undefined);
  const follower = c.members.find((m) => m !== leader)!;
  for (let i = 0; i < 10; i++) assert.equal((await http("PUT", `${leader.clientUrl}/v2/keys/p${i}`, { value: "v" })).status, 201);
  const idOf = async (url: string): Promise<string> => {
    const f = await scrape(url);
    return f.get("etcd_server_id")!.samples[0]!.labels["server_id"]!;
  };
  const leaderId = await idOf(leader.clientUrl);
  const followerId = await idOf(follower.clientUrl);
  // Heartbeats go out every 50 ms; their answers give the leader's round-trip samples.
  await until(async () => value(await scrape(leader.clientUrl), "etcd_network_peer_round_trip_time_seconds", { To: followerId }, "etcd_network_peer_round_trip_time_seconds_count") > 3, 10_000, "round trips");
  const l = await scrape(leader.clientUrl);
  const f = await scrape(follower.clientUrl);
  checkAgainstEtcd(l);
  checkAgainstEtcd(f);
  for (const name of PEER_FAMILIES) assert.ok(l.has(name), `${name} on the leader`);
  assert.ok(value(l, "etcd_network_peer_sent_bytes_total", { To: followerId }) > 1000, "the appends went to the follower");
  assert.ok(value(l, "etcd_network_peer_received_bytes_total", { From: followerId }) > 0);
  assert.ok(value(f, "etcd_network_peer_received_bytes_total", { From: leaderId }) > 1000);
  assert.ok(value(f, "etcd_network_peer_sent_bytes_total", { To: leaderId }) > 0);
  assert.ok(value(l, "etcd_network_peer_round_trip_time_seconds", { To: followerId }, "etcd_network_peer_round_trip_time_seconds_sum") > 0);
  assert.equal(value(l, "etcd_server_is_leader"), 1);
  assert.equal(value(f, "etcd_server_is_leader"), 0);
  assert.equal(value(f, "etcd_server_has_leader"), 1);
  assert.ok(value(f, "etcd_server_leader_changes_seen_total") >= 1);
  // The follower applies what the leader commits.
  await until(async () => value(await scrape(follower.clientUrl), "etcd_server_proposals_applied_total") >= value(l, "etcd_server_proposals_applied_total"), 5000, "follower applied");
});
