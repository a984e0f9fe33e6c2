// etcd's Lock and Election services (v3lockpb.Lock, v3electionpb.Election) against real
// members, kvctl and etcd 3.4 side by side, over gRPC (node:http2 and the generated
// messages: no client library speaks them but jetcd) and the JSON gateway: lockers queue
// (released by Unlock or by their lease's revoke), a waiting Lock whose call ends (reset,
// deadline, gateway client gone) leaves no key, Campaign / Leader / Proclaim / Observe /
// Resign, and the errors etcd answers (code 2: lease not found, not leader, no leader,
// "leader" field must be provided).
import assert from "node:assert/strict";
import http2 from "node:http2";
import { after, before, describe, test } from "node:test";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { Election } from "../../src/server/grpc/gen/etcd/etcdserver/api/v3election/v3electionpb/v3election_pb.ts";
import { Lock } from "../../src/server/grpc/gen/etcd/etcdserver/api/v3lock/v3lockpb/v3lock_pb.ts";
import { KV, Lease } from "../../src/server/grpc/gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { installed, startGrpcServer, waitGrpcReady, type GrpcTestServer } from "../helpers/grpc.ts";
import { until } from "../helpers/http.ts";

interface Method<I extends DescMessage, O extends DescMessage> {
  parent: { typeName: string };
  name: string;
  input: I;
  output: O;
}

interface CallResult<O extends DescMessage> {
  status: string;
  message: string;
  messages: MessageShape<O>[];
}

/** One call on `session`: its messages and status; `signal` resets it (RST_STREAM CANCEL). */
function call<I extends DescMessage, O extends DescMessage>(
  session: http2.ClientHttp2Session,
  m: Method<I, O>,
  req: MessageInitShape<I>,
  opts: { timeout?: string; signal?: AbortSignal; onMessage?: (msg: MessageShape<O>) => void } = {},
): Promise<CallResult<O>> {
  const body = toBinary(m.input, create(m.input, req));
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  const headers: http2.OutgoingHttpHeaders = { ":method": "POST", ":path": `/${m.parent.typeName}/${m.name}`, "content-type": "application/grpc", te: "trailers" };
  if (opts.timeout !== undefined) headers["grpc-timeout"] = opts.timeout;
  return new Promise((resolve, reject) => {
    const stream = session.request(headers);
    let status: http2.IncomingHttpHeaders | undefined;
    const messages: MessageShape<O>[] = [];
    let buf = Buffer.alloc(0);
    stream.on("response", (h) => {
      if (h["grpc-status"] !== undefined) status = h;
    });
    stream.on("trailers", (t) => (status = t));
    stream.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
        const msg = fromBinary(m.output, buf.subarray(5, 5 + buf.readUInt32BE(1)));
        buf = buf.subarray(5 + buf.readUInt32BE(1));
        messages.push(msg);
        opts.onMessage?.(msg);
      }
    });
    stream.on("error", (err) => {
      if (opts.signal?.aborted !== true) reject(err);
    });
    opts.signal?.addEventListener("abort", () => stream.close(http2.constants.NGHTTP2_CANCEL));
    stream.on("close", () => {
      const message = status?.["grpc-message"];
      resolve({ status: String(status?.["grpc-status"] ?? "none"), message: typeof message === "string" ? decodeURIComponent(message) : "", messages });
    });
    stream.end(Buffer.concat([prefix, body]));
  });
}

/** The one message of a successful unary call. */
async function ok<I extends DescMessage, O extends DescMessage>(p: Promise<CallResult<O>>): Promise<MessageShape<O>> {
  const r = await p;
  assert.equal(r.status, "0", `${r.status} ${r.message}`);
  assert.equal(r.messages.length, 1);
  return r.messages[0]!;
}

/** Whether `p` has settled (its callbacks had a turn). */
async function isSettled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

const b = (s: string): Buffer => Buffer.from(s);
const kinds = installed("etcd") ? (["kvctl", "etcd"] as const) : (["kvctl"] as const);

for (const kind of kinds) {
  describe(`Lock and Election services (${kind})`, { skip: !installed("etcdctl") && "etcdctl missing" }, () => {
    let server: GrpcTestServer;
    let session: http2.ClientHttp2Session;
    const grant = async (): Promise<bigint> => (await ok(call(session, Lease.method.leaseGrant, { TTL: 60n }))).ID;
    /** The keys under `prefix` (a name and "/"), in create order. */
    const keysUnder = async (prefix: string): Promise<string[]> => {
      const end = b(prefix);
      end[end.length - 1]!++;
      const r = await ok(call(session, KV.method.range, { key: b(prefix), rangeEnd: end, sortTarget: 2, sortOrder: 1 }));
      return r.kvs.map((kv) => Buffer.from(kv.key).toString());
    };
    const gateway = async (route: string, body: unknown, signal?: AbortSignal): Promise<{ status: number; body: string }> => {
      const res = await fetch(`${server.url}/v3/${route}`, { method: "POST", body: JSON.stringify(body), ...(signal === undefined ? {} : { signal }) });
      return { status: res.status, body: await res.text() };
    };

    before(async () => {
      server = await startGrpcServer(kind);
      await waitGrpcReady(server);
      session = http2.connect(`http://${server.endpoint}`);
    });
    after(async () => {
      session?.close();
      await server?.stop();
    });

    test("lockers queue: the second gets the lock at the first's Unlock, the third at the second's lease revoke", async () => {
      const [l1, l2, l3] = [await grant(), await grant(), await grant()];
      const first = await ok(call(session, Lock.method.lock, { name: b("q"), lease: l1 }));
      assert.equal(Buffer.from(first.key).toString(), `q/${l1.toString(16)}`);
      const second = ok(call(session, Lock.method.lock, { name: b("q"), lease: l2 }));
      await until(async () => (await keysUnder("q/")).length === 2, 5000, "the second locker's key");
      const third = ok(call(session, Lock.method.lock, { name: b("q"), lease: l3 }));
      await until(async () => (await keysUnder("q/")).length === 3, 5000, "the third locker's key");
      assert.equal(await isSettled(second), false, "the second waits");

      const unlocked = await ok(call(session, Lock.method.unlock, { key: first.key }));
      const got = await second;
      assert.equal(Buffer.from(got.key).toString(), `q/${l2.toString(16)}`);
      assert.ok(got.header!.revision >= unlocked.header!.revision);
      assert.equal(await isSettled(third), false, "the third still waits");
      await ok(call(session, Lease.method.leaseRevoke, { ID: l2 }));
      assert.equal(Buffer.from((await third).key).toString(), `q/${l3.toString(16)}`);
      await ok(call(session, Lock.method.unlock, { key: (await third).key }));
      assert.deepEqual(await keysUnder("q/"), []);
    });

    test("a waiting Lock that the client resets, or whose deadline passes, leaves no key", async () => {
      const [holder, waiter] = [await grant(), await grant()];
      const held = await ok(call(session, Lock.method.lock, { name: b("c"), lease: holder }));
      const ac = new AbortController();
      const reset = call(session, Lock.method.lock, { name: b("c"), lease: waiter }, { signal: ac.signal });
      await until(async () => (await keysUnder("c/")).length === 2, 5000, "the waiter's key");
      ac.abort();
      await reset;
      await until(async () => (await keysUnder("c/")).length === 1, 5000, "the reset waiter's key to go");

      const t0 = performance.now();
      const late = await call(session, Lock.method.lock, { name: b("c"), lease: waiter }, { timeout: "300m" });
      // etcd's handler answers code 2; kvctl's stream ends at the deadline with 4 (the client's own deadline ends the call first anyway).
      assert.ok(["2", "4"].includes(late.status), late.status);
      assert.equal(late.message, "context deadline exceeded");
      assert.ok(performance.now() - t0 < 3000);
      await until(async () => (await keysUnder("c/")).length === 1, 5000, "the timed-out waiter's key to go");
      assert.deepEqual(await keysUnder("c/"), [Buffer.from(held.key).toString()]);
    });

    test("errors: a missing lease, an empty key to unlock", async () => {
      const missing = await call(session, Lock.method.lock, { name: b("x"), lease: 0x7777n });
      assert.deepEqual([missing.status, missing.message], ["2", "etcdserver: requested lease not found"]);
      const empty = await call(session, Lock.method.unlock, {});
      assert.deepEqual([empty.status, empty.message], ["2", "etcdserver: key is not provided"]);
    });

    test("Campaign, Leader, Proclaim, Observe, Resign; not leader, no leader, missing leader", async () => {
      const noLeader = await call(session, Election.method.leader, { name: b("e") });
      assert.deepEqual([noLeader.status, noLeader.message], ["2", "election: no leader"]);

      const observed: string[] = [];
      const stopObserving = new AbortController();
      const observing = call(session, Election.method.observe, { name: b("e") }, {
        signal: stopObserving.signal,
        onMessage: (m) => observed.push(Buffer.from(m.kv!.value).toString()),
      });
      const [e1, e2] = [await grant(), await grant()];
      const one = await ok(call(session, Election.method.campaign, { name: b("e"), lease: e1, value: b("one") }));
      const leader = one.leader!;
      assert.deepEqual([Buffer.from(leader.key).toString(), leader.rev, leader.lease], [`e/${e1.toString(16)}`, one.header!.revision, e1]);
      const two = ok(call(session, Election.method.campaign, { name: b("e"), lease: e2, value: b("two") }));
      await until(async () => (await keysUnder("e/")).length === 2, 5000, "the second campaigner's key");
      assert.equal(await isSettled(two), false, "the second campaigner waits");

      await ok(call(session, Election.method.proclaim, { leader, value: b("one-b") }));
      const now = await ok(call(session, Election.method.leader, { name: b("e") }));
      assert.deepEqual([Buffer.from(now.kv!.value).toString(), now.kv!.createRevision], ["one-b", leader.rev]);
      const stale = await call(session, Election.method.proclaim, { leader: { ...leader, rev: leader.rev + 1n }, value: b("x") });
      assert.deepEqual([stale.status, stale.message], ["2", "election: not leader"]);
      const missing = await call(session, Election.method.proclaim, { value: b("x") });
      assert.deepEqual([missing.status, missing.message], ["2", '"leader" field must be provided']);

      await ok(call(session, Election.method.resign, { leader }));
      const won = await two;
      assert.equal(Buffer.from(won.leader!.key).toString(), `e/${e2.toString(16)}`);
      // Observe reads the new leader after the old key's deletion: a value proclaimed before
      // that read would be all it reports (etcd does the same), so wait for it first.
      await until(() => observed.length === 3, 5000, "Observe's third answer", () => observed.join(","));
      await ok(call(session, Election.method.proclaim, { leader: won.leader!, value: b("two-b") }));
      await until(() => observed.length === 4, 5000, "Observe's four answers", () => observed.join(","));
      assert.deepEqual(observed, ["one", "one-b", "two", "two-b"]);
      stopObserving.abort();
      await observing;
      await ok(call(session, Election.method.resign, { leader: won.leader! }));
    });

    test("the gateway: lock/unlock, errors as etcd's (500, code 2), a waiting Lock whose client goes away leaves no key, Observe's lines", async () => {
      const [g1, g2] = [await grant(), await grant()];
      const name = b("gw").toString("base64");
      const locked = await gateway("lock/lock", { name, lease: String(g1) });
      assert.equal(locked.status, 200);
      const key = (JSON.parse(locked.body) as { key: string }).key;
      assert.equal(Buffer.from(key, "base64").toString(), `gw/${g1.toString(16)}`);

      const gone = new AbortController();
      const waiting = gateway("lock/lock", { name, lease: String(g2) }, gone.signal).catch(() => undefined);
      await until(async () => (await keysUnder("gw/")).length === 2, 5000, "the gateway waiter's key");
      gone.abort();
      await waiting;
      await until(async () => (await keysUnder("gw/")).length === 1, 5000, "the gateway waiter's key to go");
      assert.equal((await gateway("lock/unlock", { key })).status, 200);

      const missing = await gateway("lock/lock", { name, lease: "30583" });
      assert.deepEqual(missing, { status: 500, body: JSON.stringify({ error: "etcdserver: requested lease not found", message: "etcdserver: requested lease not found", code: 2 }) });
      const noLeader = await gateway("election/leader", { name: b("none").toString("base64") });
      assert.deepEqual(noLeader, { status: 500, body: JSON.stringify({ error: "election: no leader", message: "election: no leader", code: 2 }) });

      const campaign = await gateway("election/campaign", { name: b("ge").toString("base64"), lease: String(g1), value: b("v").toString("base64") });
      assert.equal(campaign.status, 200);
      const leader = (JSON.parse(campaign.body) as { leader: { key: string; rev: string; lease: string } }).leader;
      assert.deepEqual([Buffer.from(leader.key, "base64").toString(), leader.lease], [`ge/${g1.toString(16)}`, String(g1)]);
      const stop = new AbortController();
      const res = await fetch(`${server.url}/v3/election/observe`, { method: "POST", body: JSON.stringify({ name: b("ge").toString("base64") }), signal: stop.signal });
      const reader = res.body!.getReader();
      let first = "";
      while (!first.includes("\n")) {
        const chunk = await reader.read();
        assert.equal(chunk.done, false, "Observe's stream ended before its first line");
        first += new TextDecoder().decode(chunk.value);
      }
      const line = JSON.parse(first.slice(0, first.indexOf("\n"))) as { result: { kv: { key: string; value: string } } };
      assert.deepEqual([line.result.kv.key, Buffer.from(line.result.kv.value, "base64").toString()], [leader.key, "v"]);
      stop.abort();
      assert.equal((await gateway("election/resign", { leader })).status, 200);
      assert.deepEqual(await keysUnder("ge/"), []);
    });
  });
}
