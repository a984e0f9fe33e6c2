// v3 puts and ranges through the fast lane (src/server/http/v3-fast-kv.ts) against real
// members: the same sequence of calls, valid and malformed, is sent to two fresh members
// started alike, to one as plain clients send it (Content-Length: the lane's) and to the
// other with a chunked body (which the lane leaves to node:http and the router). The answers
// must be byte for byte the same once the two members' ids are blanked: status, headers in
// order, the gRPC trailer of server errors, bodies. With v3 auth on, the lane declines and
// the router answers both.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { rawExchange } from "../helpers/raw-http.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { agent, gatewayPost } from "../helpers/http.ts";

after(() => agent.destroy());

const FLAGS = ["--max-request-bytes", "4096"];
let laneSrv: TestServer;
let httpSrv: TestServer;
let laneAuth: TestServer;
let httpAuth: TestServer;
before(async () => {
  const started = await Promise.all([1, 2, 3, 4].map(() => startServer({ flags: FLAGS })));
  [laneSrv, httpSrv, laneAuth, httpAuth] = started as [TestServer, TestServer, TestServer, TestServer];
  for (const s of [laneAuth, httpAuth]) {
    await gatewayPost(s.url, "/v3/auth/user/add", { name: "root", password: "pw" });
    await gatewayPost(s.url, "/v3/auth/user/grant", { user: "root", role: "root" });
    await gatewayPost(s.url, "/v3/auth/enable", {});
  }
});
after(() => Promise.all([laneSrv, httpSrv, laneAuth, httpAuth].map((s) => s?.stop())));

const b = (s: string): string => Buffer.from(s).toString("base64");
const PUT = "/v3/kv/put";
const RANGE = "/v3/kv/range";

/** A call: path, body, and extra header lines. */
type Call = [string, string, string?];

/** As a plain client sends it: the lane takes it. */
function viaLane([path, body, extra = ""]: Call): string {
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The same with a chunked body, which the lane leaves to node:http. */
function viaHttp([path, body, extra = ""]: Call): string {
  const n = Buffer.byteLength(body);
  const chunk = n === 0 ? "" : `${n.toString(16)}\r\n${body}\r\n`;
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${extra}Transfer-Encoding: chunked\r\n\r\n${chunk}0\r\n\r\n`;
}

const j = (o: unknown): string => JSON.stringify(o);

/** The calls, in order; each answer may depend on the ones before. */
const calls = (auth: string): Call[] => [
  [PUT, j({ key: b("a"), value: b("1") }), auth],
  [PUT, j({ key: b("a"), value: b("2"), prev_kv: true }), auth],
  [PUT, j({ key: b("b"), value: b("x"), prevKv: true }), auth],
  [PUT, j({ key: b("c"), value: b("é ✓") }), auth],
  [PUT, j({ key: b("a"), ignore_value: true }), auth],
  [PUT, j({ key: b("a"), ignore_value: true, value: b("z") }), auth],
  [PUT, j({ key: b("nokey"), ignore_value: true }), auth],
  [PUT, j({ key: b("nokey"), ignore_lease: true }), auth],
  [PUT, j({ key: b("a"), lease: "12345" }), auth],
  [PUT, j({ key: b("a"), lease: 12345 }), auth],
  [PUT, "{}", auth],
  [PUT, "", auth],
  [PUT, "null", auth],
  [PUT, "{", auth],
  [PUT, "[1]", auth],
  [PUT, "xyz", auth],
  [PUT, '{"key":5}', auth],
  [PUT, '{"key":"a$"}', auth],
  [PUT, '{"key":"YQ"}', auth],
  [PUT, '{"key":"YQ==","lease":"abc"}', auth],
  [PUT, '{"key":"YQ==","lease":1.5}', auth],
  [PUT, '{"key":"YQ==","prev_kv":"yes"}', auth],
  [PUT, j({ key: b("big"), value: b("v".repeat(5000)) }), auth],
  [PUT, '{"key":"YQ==","value":"Yg=="} trailing', auth],
  [PUT, '{"key":"\\u0059Q==","value":"w6k="}', auth],
  [PUT, '{"key":"YQ==","key":"Yg==","value":"MQ=="}', auth],
  ["/v3beta/kv/put", j({ key: b("beta"), value: b("1") }), auth],
  [`${PUT}?x=1`, j({ key: b("q"), value: b("1") }), auth],
  [RANGE, j({ key: b("a") }), auth],
  [RANGE, j({ key: b("a"), range_end: b("z") }), auth],
  [RANGE, j({ key: "AA==", range_end: "AA==" }), auth],
  [RANGE, j({ key: b("a"), range_end: b("z"), limit: 1 }), auth],
  [RANGE, j({ key: b("a"), range_end: b("z"), sort_order: "DESCEND", sort_target: "VALUE" }), auth],
  [RANGE, j({ key: b("a"), range_end: b("z"), sort_order: "XX" }), auth],
  [RANGE, j({ key: b("a"), range_end: b("z"), sort_order: 7 }), auth],
  [RANGE, j({ key: b("a"), range_end: b("z"), count_only: true }), auth],
  [RANGE, j({ key: b("a"), range_end: b("z"), keys_only: true }), auth],
  [RANGE, j({ key: b("a"), serializable: true }), auth],
  [RANGE, j({ key: b("a"), revision: "999999" }), auth],
  [RANGE, j({ key: b("a"), range_end: b("z"), min_mod_revision: "3", max_create_revision: "5" }), auth],
  [RANGE, j({ key: b("a"), limit: "x" }), auth],
  [RANGE, j({ key: b("missing") }), auth],
  [RANGE, "{}", auth],
  [RANGE, "{", auth],
  ["/v3beta/kv/range", j({ key: b("a") }), auth],
  // through the router both ways: a compaction, then ranges below and at it
  ["/v3/kv/compaction", j({ revision: "3" }), auth],
  [RANGE, j({ key: b("a"), revision: "2" }), auth],
  [RANGE, j({ key: b("a"), revision: "3" }), auth],
  // the NOSPACE alarm refuses puts as they apply; ranges still answer
  ["/v3/maintenance/alarm", j({ action: "ACTIVATE", memberID: "0", alarm: "NOSPACE" }), auth],
  [PUT, j({ key: b("a"), value: b("full") }), auth],
  [RANGE, j({ key: b("a") }), auth],
  ["/v3/maintenance/alarm", j({ action: "DEACTIVATE", memberID: "0", alarm: "NOSPACE" }), auth],
  [PUT, j({ key: b("a"), value: b("after") }), auth],
  // a caller's token: the lane leaves it to the router
  [PUT, j({ key: b("t"), value: b("1") }), `${auth}Grpc-Metadata-Token: nope\r\n`],
  [RANGE, j({ key: b("t") }), `${auth}Grpc-Metadata-Token: nope\r\n`],
];

/** Blanks what differs between two members started alike: their cluster and member ids, and so the lengths. */
const blank = (s: string): string =>
  s
    .replace(/"(cluster_id|member_id)":"\d+"/g, '"$1":"-"')
    .replace(/\r\nContent-Length: \d+\r\n/, "\r\nContent-Length: -\r\n")
    .replace(/\r\n\r\n[0-9a-f]+\r\n\{/, "\r\n\r\n-\r\n{");

async function compare(laneUrl: string, httpUrl: string, list: Call[], httpList: Call[]): Promise<string[]> {
  const lane = await rawExchange(laneUrl, list.map(viaLane), { oneAtATime: true });
  const http = await rawExchange(httpUrl, httpList.map(viaHttp), { oneAtATime: true });
  for (let i = 0; i < list.length; i++) assert.equal(blank(lane[i]!), blank(http[i]!), `call ${i}: ${list[i]![0]} ${list[i]![1].slice(0, 80)}`);
  return lane;
}

test("every v3 put and range gets the same bytes through the lane as through node:http and the router", async () => {
  const lane = await compare(laneSrv.url, httpSrv.url, calls(""), calls(""));
  assert.match(lane[0]!, /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(lane[1]!, /"prev_kv":\{"key":"YQ==".*"value":"MQ=="/);
  // a server error carries the gRPC trailer, chunked
  assert.match(lane[8]!, /^HTTP\/1\.1 404 Not Found\r\n[^]*Trailer: Grpc-Trailer-Content-Type\r\n[^]*Transfer-Encoding: chunked\r\n[^]*"code":5\}\r\n0\r\nGrpc-Trailer-Content-Type: application\/grpc\r\n\r\n$/);
  // a decoding error has none
  assert.match(lane[13]!, /^HTTP\/1\.1 400 Bad Request\r\n[^]*Content-Length: \d+\r\n[^]*"unexpected EOF"/);
  assert.match(lane[22]!, /request is too large/);
  assert.match(lane.find((a) => a.includes("database space exceeded")) ?? "", /^HTTP\/1\.1 429 /);
  assert.match(lane.find((a) => a.includes("has been compacted")) ?? "", /^HTTP\/1\.1 400 /);
});

test("with v3 auth on, the lane leaves every put and range to the router (same bytes, with and without a token)", async () => {
  const token = async (url: string): Promise<string> => String((await gatewayPost(url, "/v3/auth/authenticate", { name: "root", password: "pw" }))["token"]);
  const [laneToken, httpToken] = await Promise.all([token(laneAuth.url), token(httpAuth.url)]);
  // Without a token, then with each member's own (tokens differ between members; the answers do not carry them).
  const noToken = calls("");
  await compare(laneAuth.url, httpAuth.url, noToken, noToken);
  const lane = await compare(laneAuth.url, httpAuth.url, calls(`Authorization: ${laneToken}\r\n`), calls(`Authorization: ${httpToken}\r\n`));
  assert.match(lane[0]!, /^HTTP\/1\.1 200 OK\r\n/);
  const laneG = await compare(laneAuth.url, httpAuth.url, calls(`Grpc-Metadata-Token: ${laneToken}\r\n`), calls(`Grpc-Metadata-Token: ${httpToken}\r\n`));
  assert.match(laneG[0]!, /^HTTP\/1\.1 200 OK\r\n/);
});
