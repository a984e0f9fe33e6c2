// A learner refuses client calls as etcd 3.4.23's v3rpc interceptors do: on a real 3-member
// `kvctl serve` cluster and a started learner, etcdctl (gRPC) and the JSON gateway against
// the learner get Unavailable "etcdserver: rpc not supported for learner" (HTTP 503) for
// everything but Status and serializable Range; streams (watch, lease keepalive) are
// refused at open. Refused calls count nothing in etcd_server_client_requests_total.
// After `member promote` the same calls are served. v2 is not refused (etcd has no check).
// The expected answers are etcd 3.4.23's, taken from 2 etcd members and an etcd learner.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startCluster, type ClusterMember, type TestCluster } from "../helpers/cluster.ts";
import { etcdctl, errorLine, installed } from "../helpers/grpc.ts";
import { eventually } from "../../src/until.test-helper.ts";

const REFUSED = "etcdserver: rpc not supported for learner";
const UNARY_REFUSAL = { error: REFUSED, message: REFUSED, code: 14 };
const STREAM_REFUSAL = { error: { grpc_code: 14, http_code: 503, message: REFUSED, http_status: "Service Unavailable" } };
const haveEtcdctl = installed("etcdctl");
const b64 = (s: string): string => Buffer.from(s).toString("base64");

let cluster: TestCluster;
let learner: ClusterMember;
let learnerId = "";
before(async () => {
  cluster = await startCluster(3);
});
after(() => cluster?.stop());

const endpoint = (m: ClusterMember): string => m.clientUrl.replace("http://", "");

async function gateway(m: ClusterMember, path: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${m.clientUrl}/v3/${path}`, { method: "POST", body: JSON.stringify(body), signal: AbortSignal.timeout(20_000) });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text.split("\n")[0] ?? "") as unknown };
}

/** A stream route's first answer: its status and its first line (the stream is then dropped). */
async function streamHead(m: ClusterMember, path: string, body: unknown): Promise<{ status: number; first: unknown }> {
  const ac = new AbortController();
  const res = await fetch(`${m.clientUrl}/v3/${path}`, { method: "POST", body: JSON.stringify(body), signal: ac.signal });
  const reader = res.body!.getReader();
  let text = "";
  while (!text.includes("}\n") && !text.endsWith("}}")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString();
  }
  ac.abort();
  return { status: res.status, first: JSON.parse(text.split("\n")[0] ?? "") as unknown };
}

/** The sum of a member's etcd_server_client_requests_total series. */
async function clientRequests(m: ClusterMember): Promise<number> {
  const text = await (await fetch(`${m.clientUrl}/metrics`)).text();
  let n = 0;
  for (const hit of text.matchAll(/^etcd_server_client_requests_total\{[^}]*\} (\S+)$/gm)) n += Number(hit[1]);
  return n;
}

interface Status {
  raftAppliedIndex?: string;
  isLearner?: boolean;
}

async function status(m: ClusterMember): Promise<Status> {
  return (await gateway(m, "maintenance/status", {})).body as Status;
}

test("a learner serves Status and serializable Range, and refuses every other call", async () => {
  const leader = await eventually(() => cluster.leader(), "a leader", 10_000);
  learner = await cluster.spare("learner");
  const added = await gateway(leader, "cluster/member/add", { peerURLs: [learner.peerUrl], isLearner: true });
  assert.equal(added.status, 200, JSON.stringify(added.body));
  learnerId = (added.body as { member: { ID: string } }).member.ID;
  assert.equal((await gateway(leader, "kv/put", { key: b64("foo"), value: b64("bar") })).status, 200);
  await cluster.start(learner, { state: "existing", initialCluster: `${cluster.initialCluster()},${learner.name}=${learner.peerUrl}` });
  const target = Number((await status(leader)).raftAppliedIndex);
  await eventually(async () => (Number((await status(learner).catch((): Status => ({}))).raftAppliedIndex ?? 0) >= target ? true : undefined), "the learner to catch up", 20_000, {
    intervalMs: 100,
  });

  // The gateway.
  const counted = await clientRequests(learner);
  assert.deepEqual(await gateway(learner, "kv/put", { key: b64("foo"), value: b64("x") }), { status: 503, body: UNARY_REFUSAL });
  assert.deepEqual(await gateway(learner, "kv/range", { key: b64("foo") }), { status: 503, body: UNARY_REFUSAL });
  assert.deepEqual(await gateway(learner, "cluster/member/list", {}), { status: 503, body: UNARY_REFUSAL });
  assert.deepEqual(await gateway(learner, "lease/grant", { TTL: 10 }), { status: 503, body: UNARY_REFUSAL });
  assert.deepEqual(await gateway(learner, "lock/lock", { name: b64("l") }), { status: 503, body: UNARY_REFUSAL });
  assert.deepEqual(await streamHead(learner, "watch", { create_request: { key: b64("foo") } }), { status: 503, first: STREAM_REFUSAL });
  assert.deepEqual(await streamHead(learner, "lease/keepalive", { ID: 1 }), { status: 503, first: STREAM_REFUSAL });
  assert.deepEqual(await streamHead(learner, "maintenance/snapshot", {}), { status: 503, first: STREAM_REFUSAL });
  // A body the gateway cannot decode is its own refusal, before the call reaches the member.
  assert.equal((await gateway(learner, "kv/put", { key: "!!!" })).status, 400);
  assert.equal((await gateway(learner, "lock/lock", { name: "!!!" })).status, 400);
  // etcd's interceptor refuses before the v3rpc checks (an empty key).
  assert.deepEqual(await gateway(learner, "kv/put", { key: "" }), { status: 503, body: UNARY_REFUSAL });
  // None of these was counted: the refusal comes before etcd's interceptor counts the call.
  assert.equal(await clientRequests(learner), counted);

  const served = await gateway(learner, "kv/range", { key: b64("foo"), serializable: true });
  assert.equal(served.status, 200, JSON.stringify(served.body));
  assert.deepEqual((served.body as { kvs: Array<{ value: string }> }).kvs.map((kv) => kv.value), [b64("bar")]);
  assert.equal((await status(learner)).isLearner, true);
  assert.equal(await clientRequests(learner), counted + 2);

  // etcdctl (gRPC). All at once: etcd's client retries a refused get, member list, lease
  // grant and keepalive for about 3 s each before it gives up, and none of these changes
  // what another answers (the put and the del are refused).
  if (haveEtcdctl) {
    const ep = endpoint(learner);
    const call = (args: string[]): ReturnType<typeof etcdctl> => etcdctl(ep, args, { timeoutMs: 20_000 });
    const refusedArgs = [["put", "foo", "x"], ["get", "foo"], ["member", "list"], ["del", "foo"]];
    const [refused, grant, keepAlive, get] = await Promise.all([
      Promise.all(refusedArgs.map(call)),
      call(["lease", "grant", "10"]),
      call(["lease", "keep-alive", "1234"]),
      call(["get", "foo", "--consistency=s"]),
    ]);
    refused.forEach((r, i) => assert.deepEqual([r.code, errorLine(r.stderr)], [1, `Error: ${REFUSED}`], refusedArgs[i]!.join(" ")));
    assert.deepEqual([grant.code, errorLine(grant.stderr)], [1, `Error: failed to grant lease (${REFUSED})`]);
    // etcd's client reads the refused keepalive stream as a lease gone.
    assert.deepEqual([keepAlive.code, keepAlive.stdout], [0, "lease 0000000000001234 expired or revoked.\n"]);
    assert.deepEqual([get.code, get.stdout], [0, "foo\nbar\n"], get.stderr);
    const st = await etcdctl(ep, ["endpoint", "status", "-w", "json"], { timeoutMs: 20_000 });
    assert.equal(st.code, 0, st.stderr);
    assert.equal((JSON.parse(st.stdout) as Array<{ Status: { isLearner?: boolean } }>)[0]?.Status.isLearner, true);
  }

  // v2 is served on a learner, as etcd's v2 handlers have no learner check.
  const v2 = await fetch(`${learner.clientUrl}/v2/keys/v2k`, { method: "PUT", body: new URLSearchParams({ value: "1" }) });
  assert.equal(v2.status, 201, await v2.text());
});

test("once promoted, the member serves the calls it refused", async () => {
  assert.ok(learnerId !== "", "the learner of the first test");
  const leader = await eventually(() => cluster.leader(), "a leader", 10_000);
  const promoted = await gateway(leader, "cluster/member/promote", { ID: learnerId });
  assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
  await eventually(async () => ((await status(learner)).isLearner === undefined ? true : undefined), "the learner to apply its promotion", 10_000);

  assert.equal((await gateway(learner, "kv/put", { key: b64("foo"), value: b64("after") })).status, 200);
  const range = await gateway(learner, "kv/range", { key: b64("foo") });
  assert.deepEqual([range.status, (range.body as { kvs: Array<{ value: string }> }).kvs[0]?.value], [200, b64("after")]);
  assert.equal((await gateway(learner, "cluster/member/list", {})).status, 200);
  const watch = await streamHead(learner, "watch", { create_request: { key: b64("foo") } });
  assert.equal(watch.status, 200);
  assert.equal((watch.first as { result: { created: boolean } }).result.created, true);
  if (haveEtcdctl) {
    const ep = endpoint(learner);
    const put = await etcdctl(ep, ["put", "foo", "again"], { timeoutMs: 20_000 });
    assert.deepEqual([put.code, put.stdout], [0, "OK\n"], put.stderr);
    const get = await etcdctl(ep, ["get", "foo"], { timeoutMs: 20_000 });
    assert.deepEqual([get.code, get.stdout], [0, "foo\nagain\n"], get.stderr);
    const grant = await etcdctl(ep, ["lease", "grant", "10"], { timeoutMs: 20_000 });
    assert.equal(grant.code, 0, grant.stderr);
  }
});
