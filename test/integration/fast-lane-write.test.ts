// v2 writes through the fast lane (src/server/http/keys-fast-write.ts) against a real
// member: the same sequence of writes is sent once as plain clients send it (the lane's)
// and once with a chunked body (which the lane leaves to node:http and the router), on two
// key prefixes; the answers must be byte for byte the same once indexes, the prefix and
// expirations are blanked. What the lane declines (parameter errors, redirects, other
// content types) must get the router's answer too.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { rawExchange } from "../helpers/raw-http.ts";
import { startServer, type TestServer } from "../helpers/server.ts";
import { agent } from "../helpers/http.ts";

after(() => agent.destroy());

let srv: TestServer;
before(async () => {
  srv = await startServer();
});
after(() => srv.stop());

/** Sends raw requests on one connection, each once the answer before it came (answers depend on the writes before them). */
const raw = (requests: string[]): Promise<string[]> => rawExchange(srv.url, requests, { oneAtATime: true });

const FORM = "Content-Type: application/x-www-form-urlencoded\r\n";

/** As a plain client sends it: the lane takes it. */
function viaLane(method: string, target: string, body?: string, type = FORM): string {
  if (body === undefined) return `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
  return `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${type}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The same with a chunked body (or an explicit empty one), which the lane leaves to node:http. */
function viaHttp(method: string, target: string, body?: string, type = FORM): string {
  if (body === undefined) return `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`;
  const n = Buffer.byteLength(body);
  const chunk = n === 0 ? "" : `${n.toString(16)}\r\n${body}\r\n`;
  return `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${type}Transfer-Encoding: chunked\r\n\r\n${chunk}0\r\n\r\n`;
}

/** The writes, on prefix P. */
const writes = (p: string): Array<[string, string, string?, string?]> => [
  ["PUT", `/v2/keys${p}/a`, "value=1"],
  ["PUT", `/v2/keys${p}/a`, "value=2"],
  ["PUT", `/v2/keys${p}/a?prevValue=2`, "value=3"],
  ["PUT", `/v2/keys${p}/a?prevValue=zzz`, "value=4"],
  ["PUT", `/v2/keys${p}/a?prevExist=false`, "value=5"],
  ["PUT", `/v2/keys${p}/a`, "value=6&prevIndex=1"],
  ["PUT", `/v2/keys${p}/u`, "value=%E2%9C%93+x%20y&noValueOnSuccess=true"],
  ["PUT", `/v2/keys${p}/d?dir=true`, ""],
  ["PUT", `/v2/keys${p}/d`, "value=x"],
  ["POST", `/v2/keys${p}/q`, "value=in-order"],
  ["PUT", `/v2/keys${p}/t`, "value=x&ttl=100"],
  ["DELETE", `/v2/keys${p}/a`],
  ["DELETE", `/v2/keys${p}/missing`],
  ["DELETE", `/v2/keys${p}/d?dir=true`],
  // declined by the lane, answered by the router either way
  ["PUT", `/v2/keys${p}/b?ttl=abc`, "value=1"],
  ["PUT", `/v2/keys${p}//b`, "value=1"],
  ["PUT", `/v2/keys${p}/%62`, "value=1"],
  ["PUT", `/v2/keys${p}/c`, "value=1", "Content-Type: text/plain\r\n"],
  ["PUT", `/v2/keys${p}/c`, "a=%zz"],
  ["PATCH", `/v2/keys${p}/c`, "value=1"],
];

/** Blanks what differs between two runs of the same writes: indexes, the prefix, expirations. */
function blank(s: string, p: string): string {
  return s
    .split(p)
    .join("/P")
    .replace(/(X-(?:Kv|Etcd|Raft)-Index): \d+/g, "$1: -")
    .replace(/"(modifiedIndex|createdIndex|index)":\d+/g, '"$1":-')
    .replace(/"expiration":"[^"]*"/g, '"expiration":"-"')
    .replace(/"ttl":\d+/g, '"ttl":-')
    .replace(/ != \d+\]/g, " != -]")
    .replace(/\/P\/q\/\d+/g, "/P/q/-")
    .replace(/Content-Length: \d+/g, "Content-Length: -");
}

test("every v2 write gets the same answer through the lane as through node:http and the router", async () => {
  const lane = await raw(writes("/lane").map(([m, t, b, ct]) => viaLane(m, t, b, ct)));
  const http = await raw(writes("/http").map(([m, t, b, ct]) => viaHttp(m, t, b, ct)));
  const list = writes("/lane");
  for (let i = 0; i < list.length; i++) {
    assert.equal(blank(lane[i]!, "/lane"), blank(http[i]!, "/http"), `${list[i]![0]} ${list[i]![1]}`);
  }
  // The first write created the key through the lane: 201 with the router's headers.
  assert.match(lane[0]!, /^HTTP\/1\.1 201 Created\r\n/);
  assert.match(lane[3]!, /^HTTP\/1\.1 412 /);
});

test("a key written through the lane reads back, and its lengths are exact (one answer per write on one connection)", async () => {
  const out = await raw([viaLane("PUT", "/v2/keys/rb", "value=%C3%A9"), viaLane("PUT", "/v2/keys/rb", "value=2"), `GET /v2/keys/rb HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`]);
  assert.equal(out.length, 3);
  assert.match(out[0]!, /"value":"é"/);
  assert.match(out[2]!, /"value":"2"/);
});
