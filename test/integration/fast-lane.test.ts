// The fast lane (src/server/http/fast-lane.ts) against a real member: every answer it gives
// is the answer node:http and the router give to the same request, and what it declines
// still gets the router's answer.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { connect } from "node:net";
import { once } from "node:events";
import { rawExchange } from "../helpers/raw-http.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { agent, json } from "../helpers/http.ts";

after(() => agent.destroy());

let srv: TestServer;
before(async () => {
  srv = await startServer();
  await json("PUT", `${srv.url}/v2/keys/k`, { value: "v ✓" });
  await json("PUT", `${srv.url}/v2/keys/dir/b`, { value: "2" });
  await json("PUT", `${srv.url}/v2/keys/dir/a`, { value: "1" });
  await json("PUT", `${srv.url}/v2/keys/dir/sub/c`, { value: "3" });
  await json("PUT", `${srv.url}/v2/keys/_hidden`, { value: "h" });
});
after(() => srv.stop());

/** Sends raw request heads on one connection, pipelined, and returns the raw responses (Date blanked). */
const raw = (heads: string[], url = srv.url): Promise<string[]> => rawExchange(url, heads);

/** A GET as a plain client sends it (the lane's), and the same GET with a header the lane leaves to node:http. */
const viaLane = (target: string, extra = ""): string => `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`;
const viaHttp = (target: string, extra = ""): string => `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n${extra}\r\n`;

const targets = [
  "/v2/keys/k",
  "/v2/keys/dir",
  "/v2/keys/dir/",
  "/v2/keys/dir?recursive=true&sorted=true",
  "/v2/keys/dir?sorted=true&recursive=false",
  "/v2/keys",
  "/v2/keys/",
  "/v2/keys/_hidden",
  "/v2/keys/missing",
  "/v2/keys/dir/sub/c?recursive=1",
  // declined by the lane (redirect, escapes, parameter errors, quorum, unknown paths)
  "/v2/keys//k",
  "/v2/keys/./k",
  "/v2/keys/%6B",
  "/v2/keys/k?recursive=maybe",
  "/v2/keys/k?waitIndex=x",
  "/v2/keys/k?quorum=true",
  "/v2/keys/k?a=%zz",
  "/version",
  "/v2/keysx",
];

test("every plain GET gets the same bytes through the lane as through node:http and the router", async () => {
  const lane = await raw(targets.map((t) => viaLane(t)));
  const http = await raw(targets.map((t) => viaHttp(t)));
  for (let i = 0; i < targets.length; i++) {
    // /version carries no index; every other answer must match byte for byte.
    assert.equal(lane[i], http[i], `answers differ for ${targets[i]}`);
  }
  assert.match(lane[0]!, /^HTTP\/1\.1 200 OK\r\n[^]*"value":"v ✓"/);
  assert.match(lane[8]!, /^HTTP\/1\.1 404 Not Found\r\n/);
  assert.match(lane[10]!, /^HTTP\/1\.1 301 Moved Permanently\r\n/);
});

test("requests pipelined around writes on one connection are answered in order, each seeing the writes before it", async () => {
  const put = (v: string): string => `PUT /v2/keys/order HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${6 + v.length}\r\n\r\nvalue=${v}`;
  const answers = await raw([viaLane("/v2/keys/k"), put("1"), viaLane("/v2/keys/order"), put("2"), viaLane("/v2/keys/order?quorum=true"), viaLane("/v2/keys/order")]);
  assert.match(answers[0]!, /"key":"\/k"/);
  assert.match(answers[1]!, /^HTTP\/1\.1 201 Created/);
  // After the hand-over node:http parses them all at once; the router still runs them in turn.
  assert.match(answers[2]!, /^HTTP\/1\.1 200 OK[^]*"value":"1"/);
  assert.match(answers[3]!, /^HTTP\/1\.1 200 OK[^]*"value":"2"/);
  assert.match(answers[4]!, /"value":"2"/);
  assert.match(answers[5]!, /"value":"2"/);
  // A new connection starts in the lane again.
  const [after] = await raw([viaLane("/v2/keys/order")]);
  assert.match(after!, /"value":"2"/);
});

test("with v2 authentication on, the lane and the router give the same bytes to the guest and to users, allowed or not", async () => {
  const s = await startServer();
  after(() => s.stop());
  for (const k of ["pub/a", "pub/sub/b", "secret"]) await json("PUT", `${s.url}/v2/keys/${k}`, { value: k });
  const rootAuth = `Basic ${Buffer.from("root:pw").toString("base64")}`;
  const put = (path: string, body: unknown) =>
    fetch(`${s.url}${path}`, { method: "PUT", body: JSON.stringify(body), headers: { "Content-Type": "application/json", Authorization: rootAuth } });
  assert.equal((await put("/v2/auth/users/root", { user: "root", password: "pw" })).status, 201);
  assert.equal((await put("/v2/auth/enable", {})).status, 200);
  assert.equal((await put("/v2/auth/roles/guest", { role: "guest", revoke: { kv: { read: ["/*"], write: ["/*"] } } })).status, 200);
  assert.equal((await put("/v2/auth/roles/guest", { role: "guest", grant: { kv: { read: ["/pub/*"], write: [] } } })).status, 200);
  const creds = ["", `Authorization: ${rootAuth}\r\n`, `Authorization: Basic ${Buffer.from("root:bad").toString("base64")}\r\n`, "Authorization: Bearer x\r\n"];
  const paths = ["/v2/keys/pub/a", "/v2/keys/pub/missing", "/v2/keys/pub?recursive=true", "/v2/keys/secret", "/v2/keys", "/v2/keys/"];
  const cases = creds.flatMap((c) => paths.map((p) => [p, c] as const));
  // Twice: the first round verifies root's password (the router's KDF), the second finds it cached.
  for (const round of [1, 2]) {
    const lane = await raw(cases.map(([p, c]) => viaLane(p, c)), s.url);
    const http = await raw(cases.map(([p, c]) => viaHttp(p, c)), s.url);
    cases.forEach(([p, c], i) => assert.equal(lane[i], http[i], `round ${round}: answers differ for ${p} ${c.trim()}`));
    assert.match(lane[0]!, /^HTTP\/1\.1 200 OK[^]*"value":"pub\/a"/);
    assert.match(lane[3]!, /^HTTP\/1\.1 401 Unauthorized/);
    assert.match(lane[paths.length + 3]!, /^HTTP\/1\.1 200 OK[^]*"value":"secret"/);
    assert.match(lane[2 * paths.length + 3]!, /^HTTP\/1\.1 401 Unauthorized/);
  }
});

test("with v2 authentication on, a guest without read permission is refused", async () => {
  const s = await startServer();
  after(() => s.stop());
  await json("PUT", `${s.url}/v2/keys/secret`, { value: "x" });
  const put = (path: string, body: unknown) =>
    fetch(`${s.url}${path}`, { method: "PUT", body: JSON.stringify(body), headers: { "Content-Type": "application/json", Authorization: `Basic ${Buffer.from("root:pw").toString("base64")}` } });
  assert.equal((await put("/v2/auth/users/root", { user: "root", password: "pw" })).status, 201);
  assert.equal((await put("/v2/auth/enable", {})).status, 200);
  // The guest role (created by enable with access to everything) may read nothing.
  assert.equal((await put("/v2/auth/roles/guest", { role: "guest", revoke: { kv: { read: ["/*"], write: ["/*"] } } })).status, 200);
  const port = Number(new URL(s.url).port);
  const sock = connect(port, "127.0.0.1");
  await once(sock, "connect");
  sock.write(viaLane("/v2/keys/secret"));
  let got = "";
  for await (const c of sock) {
    got += (c as Buffer).toString();
    if (got.includes("}\n")) break;
  }
  sock.destroy();
  assert.match(got, /^HTTP\/1\.1 401 Unauthorized/);
  assert.match(got, /"errorCode":110/);
});
