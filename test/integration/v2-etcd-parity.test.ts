// v2 answers side by side with etcd 3.4 where precision or order matters and the
// differential fuzzer's normalisation would hide it: expiration timestamps to the
// nanosecond, a TTL that overflows Go's Duration, and the members API's answers for an id
// that names no member while the cluster could not spare a voter.
import { test } from "node:test";
import assert from "node:assert/strict";
import { etcdAvailable, startSide, type Side } from "../fuzz/v2-differential.ts";
import { freePort, kvctlBin, runKvctl } from "../helpers/server.ts";
import { until } from "../helpers/http.ts";

const hasEtcd = await etcdAvailable();
const skip = !hasEtcd && "etcd is not installed";

async function both(fn: (url: string, kind: "etcd" | "kvctl") => Promise<void>): Promise<void> {
  const sides: Side[] = [];
  try {
    for (const kind of ["etcd", "kvctl"] as const) {
      const side = await startSide(kind, await freePort(), await freePort(), kvctlBin);
      sides.push(side);
      await fn(`http://127.0.0.1:${side.port}`, kind);
    }
  } finally {
    await Promise.all(sides.map((s) => s.stop()));
  }
}

async function call(url: string, method: string, path: string, body?: string, contentType = "application/x-www-form-urlencoded"): Promise<{ status: number; json: Record<string, unknown> }> {
  const init: RequestInit = { method, signal: AbortSignal.timeout(10_000) };
  if (body !== undefined) init.body = body;
  if (body !== undefined) init.headers = { "Content-Type": contentType };
  const res = await fetch(url + path, init);
  return { status: res.status, json: JSON.parse(await res.text()) as Record<string, unknown> };
}

/** X-Raft-Index of a v2 keys request's answer: etcd's committed index, kvctl's applied index. */
async function raftIndexOf(url: string, method: string, path: string, body?: string): Promise<number> {
  const res = await fetch(url + path, { method, signal: AbortSignal.timeout(10_000), ...(body === undefined ? {} : { body, headers: { "Content-Type": "application/x-www-form-urlencoded" } }) });
  await res.arrayBuffer();
  return Number(res.headers.get("x-raft-index"));
}

const node = (r: { json: Record<string, unknown> }, k = "node"): Record<string, unknown> => r.json[k] as Record<string, unknown>;
/** RFC3339Nano in UTC with the fraction's digits: etcd's nanosecond stamps show more than 6 (but for 1 in 1000). */
const NANO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{7,9}Z$/;

test("v2 expirations carry nanoseconds as etcd's do: set, refresh, get, watch, kvctl -o json", { skip }, async () => {
  await both(async (url, kind) => {
    const t0 = Date.now();
    const set = await call(url, "PUT", "/v2/keys/n?ttl=100", "value=1");
    const exp = String(node(set)["expiration"]);
    assert.match(exp, NANO, `${kind} set`);
    assert.ok(Math.abs(Date.parse(exp) - (t0 + 100_000)) < 1500, `${kind} ${exp}`);
    const refresh = await call(url, "PUT", "/v2/keys/n?ttl=50&refresh=true&prevExist=true");
    assert.match(String(node(refresh)["expiration"]), NANO, `${kind} refresh`);
    assert.equal(node(refresh, "prevNode")["expiration"], exp);
    const got = await call(url, "GET", "/v2/keys/n");
    assert.equal(node(got)["expiration"], node(refresh)["expiration"]);
    const watched = await call(url, "GET", `/v2/keys/n?wait=true&waitIndex=${String(node(set)["modifiedIndex"])}`);
    assert.equal(node(watched)["expiration"], exp);
    if (kind === "kvctl") {
      const cli = await runKvctl(["--endpoints", url, "-o", "json", "get", "/n"]);
      assert.equal((JSON.parse(cli.stdout) as { node: { expiration: string } }).node.expiration, node(got)["expiration"]);
    }
  });
});

test("a ttl past Go's Duration range wraps as on etcd: update stamps 1688 with etcd's saturated ttl", { skip }, async () => {
  const seen: unknown[] = [];
  await both(async (url, kind) => {
    const set = await call(url, "PUT", "/v2/keys/big?ttl=99999999999", "value=1");
    const up = await call(url, "PUT", "/v2/keys/big?ttl=99999999999&prevExist=true", "value=2");
    const reset = await call(url, "PUT", "/v2/keys/big", "value=3");
    // A SYNC after the reset must expire nothing: the key was replaced. The leader proposes
    // one every 500 ms while some key has a TTL, which the ticker ensures; the raft index
    // moving past the ticker's write shows one was committed (nothing else writes), and a
    // quorum read, going through the log, then reads after it was applied.
    const ticker = await raftIndexOf(url, "PUT", "/v2/keys/ticker?ttl=60", "value=1");
    await until(async () => (await raftIndexOf(url, "GET", "/v2/keys/ticker")) > ticker, 5000, `${kind}: a SYNC after the reset`);
    const got = await call(url, "GET", "/v2/keys/big?quorum=true");
    seen.push({
      setExp: node(set)["expiration"] ?? null,
      upYear: String(node(up)["expiration"]).slice(0, 4),
      upTtl: node(up)["ttl"],
      prevTtl: node(reset, "prevNode")["ttl"],
      got: node(got)["value"],
    });
  });
  assert.deepEqual(seen[1], seen[0]);
  assert.deepEqual(seen[0], { setExp: null, upYear: "1688", upTtl: -9223372036, prevTtl: -9223372036, got: "3" });
});

test("members API: an unknown id is refused by the quorum check before the lookup, bodies as etcd's", { skip }, async () => {
  const seen: unknown[] = [];
  await both(async (url) => {
    const answers: unknown[] = [];
    const ask = async (method: string, path: string, body?: string, ct?: string): Promise<void> => {
      const r = await call(url, method, path, body, ct);
      answers.push([method, path, body ?? null, r.status, r.json]);
    };
    await ask("POST", "/v2/members", "true", "application/json");
    await ask("POST", "/v2/members", '{"peerURLs":[false]}', "application/json");
    await ask("DELETE", "/v2/members/1234");
    await ask("DELETE", "/v2/members/zz");
    await ask("PUT", "/v2/members/1234", '{"peerURLs":["http://127.0.0.1:1"]}', "application/json");
    // A second member that never starts: 1 of 2 voters started, so etcd's mayRemoveMember
    // refuses any removal, even of an id that is no member.
    const add = await call(url, "POST", "/v2/members", '{"peerURLs":["http://127.0.0.1:9"]}', "application/json");
    assert.equal(add.status, 201);
    await ask("DELETE", "/v2/members/1234");
    await ask("DELETE", "/v2/members/ffffffffffffffff");
    seen.push(answers);
  });
  assert.deepEqual(seen[1], seen[0]);
});
