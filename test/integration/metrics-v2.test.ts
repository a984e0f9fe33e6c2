// The v2 HTTP API's families (etcd_http_received_total, etcd_http_failed_total,
// etcd_http_successful_duration_seconds) after a known mix of requests. The expected
// counts were taken from etcd 3.4.23 (`etcd --enable-v2=true`, one member) given the same
// requests: what is received (parsed and authorized, not waiting), what failed and with
// which code (parameter errors and auth refusals are neither), what is timed (watches are
// not). The mix runs twice: once on keep-alive connections (the fast lane answers what it
// takes) and once with `Connection: close` (the lane declines every request: the router
// answers all), and each run must move the counters by the same amounts.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "../helpers/server.ts";
import { agent, http, rawLongPoll } from "../helpers/http.ts";
import { parseExposition, type ParsedFamily } from "../helpers/prometheus.ts";

after(() => agent.destroy());

type Families = Map<string, ParsedFamily>;

async function scrape(url: string): Promise<Families> {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  return parseExposition(await res.text());
}

/** Every sample of the etcd_http_* families but the histogram's buckets and sums, as "name{labels}" -> value. */
function httpSamples(f: Families): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, fam] of f) {
    if (!name.startsWith("etcd_http_")) continue;
    for (const s of fam.samples) {
      if (s.name.endsWith("_bucket") || s.name.endsWith("_sum")) continue;
      const labels = Object.keys(s.labels)
        .sort()
        .map((k) => `${k}=${s.labels[k]!}`)
        .join(",");
      out.set(`${s.name}{${labels}}`, s.value);
    }
  }
  return out;
}

/** One run's counts, from etcd 3.4.23 given the same requests. */
const PER_RUN: ReadonlyArray<[string, number]> = [
  ["etcd_http_received_total{method=PUT}", 7],
  ["etcd_http_received_total{method=POST}", 1],
  ["etcd_http_received_total{method=GET}", 2],
  ["etcd_http_received_total{method=QGET}", 2],
  ["etcd_http_received_total{method=HEAD}", 2],
  ["etcd_http_received_total{method=DELETE}", 3],
  ["etcd_http_failed_total{code=400,method=PUT}", 1],
  ["etcd_http_failed_total{code=403,method=PUT}", 1],
  ["etcd_http_failed_total{code=412,method=PUT}", 2],
  ["etcd_http_failed_total{code=404,method=GET}", 1],
  ["etcd_http_failed_total{code=404,method=QGET}", 1],
  ["etcd_http_failed_total{code=404,method=HEAD}", 1],
  ["etcd_http_failed_total{code=403,method=DELETE}", 1],
  ["etcd_http_failed_total{code=404,method=DELETE}", 1],
  ["etcd_http_successful_duration_seconds_count{method=PUT}", 3],
  ["etcd_http_successful_duration_seconds_count{method=POST}", 1],
  ["etcd_http_successful_duration_seconds_count{method=GET}", 1],
  ["etcd_http_successful_duration_seconds_count{method=QGET}", 2],
  ["etcd_http_successful_duration_seconds_count{method=HEAD}", 1],
  ["etcd_http_successful_duration_seconds_count{method=DELETE}", 1],
];

async function mix(url: string, p: string, headers: Record<string, string>): Promise<void> {
  const k = `${url}/v2/keys/${p}`;
  const expect = async (method: string, target: string, status: number, form?: Record<string, string>): Promise<string> => {
    const r = await http(method, target, form, headers);
    assert.equal(r.status, status, `${method} ${target}: ${r.body}`);
    return String(r.headers["x-etcd-index"]);
  };
  const first = await expect("PUT", `${k}/a`, 201, { value: "1" });
  await expect("PUT", `${k}/a`, 200, { value: "2" });
  await expect("POST", `${k}/q`, 201, { value: "x" });
  await expect("GET", `${k}/a`, 200);
  await expect("GET", `${k}/a?quorum=true`, 200);
  await expect("HEAD", `${k}/a`, 200);
  await expect("GET", `${k}/missing`, 404);
  await expect("GET", `${k}/missing?quorum=true`, 404);
  await expect("HEAD", `${k}/missing`, 404);
  await expect("PUT", `${k}/a?prevExist=false`, 412, { value: "3" });
  await expect("PUT", `${k}/a?prevValue=zz`, 412, { value: "3" });
  await expect("PUT", `${k}/d?dir=true`, 201);
  await expect("PUT", `${k}/d`, 403, { value: "1" });
  await expect("DELETE", `${k}/d`, 403);
  await expect("DELETE", `${k}/missing`, 404);
  await expect("DELETE", `${k}/a`, 200);
  // Refused before the server: not counted.
  await expect("PUT", `${k}/a?ttl=abc`, 400, { value: "1" });
  await expect("PUT", `${k}/a?prevValue=`, 400, { value: "1" });
  await expect("PATCH", `${k}/a`, 405);
  // Refused by the store (root is read-only): counted, 400.
  await expect("PUT", `${url}/v2/keys/`, 400, { value: "1" });
  // A watch answered from history: neither received nor timed.
  await expect("GET", `${k}/a?wait=true&waitIndex=${first}`, 200);
  // quorum wins over wait: answered at once and timed as a QGET, but not received (etcd's rr.Wait).
  await expect("GET", `${k}/q?wait=true&quorum=true`, 200);
}

test("etcd_http_*: etcd 3.4's counts for a known mix, the fast lane and the router alike, auth refusals uncounted", async () => {
  const srv = await startServer();
  after(() => srv.stop());
  const start = await scrape(srv.url);
  const before = httpSamples(start);
  assert.equal(before.size, 0, "no series before the first v2 request, as etcd");
  const watchRequests = async (): Promise<number> => (await scrape(srv.url)).get("etcd_debugging_store_watch_requests_total")!.samples[0]!.value;
  assert.equal(start.get("etcd_debugging_store_watch_requests_total")?.samples[0]?.value, 0);
  // The v3 auth store's revision: 1 from the start, as etcd commits it.
  assert.equal(start.get("etcd_debugging_auth_revision")?.samples[0]?.value, 1);

  // A long poll open across the scrapes counts nowhere.
  const port = Number(new URL(srv.url).port);
  const poll = rawLongPoll(port, "/v2/keys/never?wait=true");
  await poll.head;

  await mix(srv.url, "lane", {});
  const one = httpSamples(await scrape(srv.url));
  assert.deepEqual(new Map([...one].sort()), new Map([...PER_RUN].sort()), "one run: etcd's series and counts, no others");

  await mix(srv.url, "router", { Connection: "close" });
  const two = httpSamples(await scrape(srv.url));
  assert.deepEqual(new Map([...two].sort()), new Map(PER_RUN.map(([k, v]) => [k, 2 * v] as [string, number]).sort()), "the router counts as the lane");
  poll.socket.destroy();
  await poll.closed;
  // Watches taken by the v2 store, as etcd's watcher hub counts them: the long poll and each
  // run's watch answered from history; the quorum GET with wait=true is no watch.
  assert.equal(await watchRequests(), 3);

  // Timed in etcd's buckets, from 0.5 ms on; the sum is real time.
  const fam = (await scrape(srv.url)).get("etcd_http_successful_duration_seconds")!;
  const les = fam.samples.filter((s) => s.name.endsWith("_bucket") && s.labels["method"] === "PUT").map((s) => s.labels["le"]);
  assert.deepEqual(les, ["0.0005", "0.001", "0.002", "0.004", "0.008", "0.016", "0.032", "0.064", "0.128", "0.256", "0.512", "1.024", "2.048", "+Inf"]);
  assert.ok(fam.samples.find((s) => s.name.endsWith("_sum") && s.labels["method"] === "PUT")!.value > 0);

  // v2 access control on, the guest's rights revoked: refusals (401) are neither received
  // nor failed; root's requests count (its GETs in the lane, its writes in the router).
  const root = { Authorization: "Basic " + Buffer.from("root:pw").toString("base64") };
  const auth = async (method: string, path: string, body: unknown, h: Record<string, string> = {}): Promise<number> => {
    const r = await fetch(`${srv.url}${path}`, { method, headers: h, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    await r.text();
    return r.status;
  };
  assert.equal(await auth("PUT", "/v2/auth/users/root", { user: "root", password: "pw" }), 201);
  assert.equal(await auth("PUT", "/v2/auth/enable", undefined), 200);
  assert.equal(await auth("PUT", "/v2/auth/roles/guest", { role: "guest", revoke: { kv: { read: ["/*"], write: ["/*"] } } }, root), 200);
  const base = httpSamples(await scrape(srv.url));
  assert.equal((await http("GET", `${srv.url}/v2/keys/x`)).status, 401);
  assert.equal((await http("PUT", `${srv.url}/v2/keys/x`, { value: "1" })).status, 401);
  assert.equal((await http("GET", `${srv.url}/v2/keys/x`, undefined, { Authorization: "Basic " + Buffer.from("root:bad").toString("base64") })).status, 401);
  assert.equal((await http("PUT", `${srv.url}/v2/keys/x`, { value: "1" }, root)).status, 201);
  assert.equal((await http("GET", `${srv.url}/v2/keys/x`, undefined, root)).status, 200);
  assert.equal((await http("GET", `${srv.url}/v2/keys/nothere`, undefined, root)).status, 404);
  const withAuth = httpSamples(await scrape(srv.url));
  const moved = [...withAuth].filter(([k, v]) => v !== (base.get(k) ?? 0)).map(([k, v]): [string, number] => [k, v - (base.get(k) ?? 0)]);
  assert.deepEqual(new Map(moved), new Map<string, number>([
    ["etcd_http_received_total{method=PUT}", 1],
    ["etcd_http_received_total{method=GET}", 2],
    ["etcd_http_successful_duration_seconds_count{method=PUT}", 1],
    ["etcd_http_successful_duration_seconds_count{method=GET}", 1],
    ["etcd_http_failed_total{code=404,method=GET}", 1],
  ]));
  assert.ok(![...withAuth.keys()].some((k) => k.includes("code=401")), "no 401 series");
});
