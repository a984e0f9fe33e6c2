import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { after, test } from "node:test";
import type { RegisterInput } from "../linearizability/register-model.ts";
import { ApiChoice, parseApiChoice, workloadKeys } from "./api.ts";
import { closeClientConnections, Outcome, type OpResult } from "./v2-client.ts";
import { classifyV3, probeV3, runV3Op, v3Request } from "./v3-client.ts";

const b64 = (s: string): string => Buffer.from(s).toString("base64");
const header = { cluster_id: "1", member_id: "2", revision: "7", raft_term: "3" };
const kv = (key: string, value: string): object => ({ key: b64(key), value: b64(value), create_revision: "2", mod_revision: "7", version: "3" });

const get: RegisterInput = { op: "get", key: "lin3/k0" };
const put: RegisterInput = { op: "set", key: "lin3/k0", value: "c1-0" };
const cas: RegisterInput = { op: "cas", key: "lin3/k0", prevValue: "c1-0", value: "c1-1" };

interface ClassifyCase {
  name: string;
  input: RegisterInput;
  body: unknown;
  expect: Pick<OpResult, "outcome" | "output">;
}

const U = { outcome: Outcome.unknown, output: { type: "unknown" } } as const;
const classifyCases: ClassifyCase[] = [
  { name: "a range with one kv reads its value", input: get, body: { header, kvs: [kv("lin3/k0", "c2-5")], count: "1" }, expect: { outcome: Outcome.definite, output: { type: "value", value: "c2-5" } } },
  { name: "a range without kvs reads not-found", input: get, body: { header }, expect: { outcome: Outcome.definite, output: { type: "value", value: null } } },
  { name: "a range of another key proves nothing", input: get, body: { header, kvs: [kv("lin3/k1", "x")] }, expect: U },
  { name: "a range with two kvs proves nothing", input: get, body: { header, kvs: [kv("lin3/k0", "x"), kv("lin3/k0", "y")] }, expect: U },
  { name: "an answer without a header proves nothing", input: get, body: { kvs: [kv("lin3/k0", "x")] }, expect: U },
  { name: "a put answered with a header is ok", input: put, body: { header }, expect: { outcome: Outcome.definite, output: { type: "ok" } } },
  { name: "a put answered without a header is unknown", input: put, body: {}, expect: U },
  { name: "a txn that succeeded with its put is ok", input: cas, body: { header, succeeded: true, responses: [{ response_put: { header: { revision: "8" } } }] }, expect: { outcome: Outcome.definite, output: { type: "ok" } } },
  { name: "a txn that succeeded without its put is unknown", input: cas, body: { header, succeeded: true }, expect: U },
  {
    name: "a failed txn whose range holds another value is compare-failed",
    input: cas,
    body: { header, responses: [{ response_range: { header: { revision: "7" }, kvs: [kv("lin3/k0", "c3-2")], count: "1" } }] },
    expect: { outcome: Outcome.definite, output: { type: "compare-failed" } },
  },
  {
    name: "a failed txn whose range is empty is not-found",
    input: cas,
    body: { header, responses: [{ response_range: { header: { revision: "7" } } }] },
    expect: { outcome: Outcome.definite, output: { type: "not-found" } },
  },
  { name: "a failed txn without its range is unknown", input: cas, body: { header }, expect: U },
  { name: "a txn with a non-boolean succeeded is unknown", input: cas, body: { header, succeeded: "true", responses: [{ response_put: {} }] }, expect: U },
];

for (const c of classifyCases) {
  test(`classifyV3: ${c.name}`, () => {
    const r = classifyV3(c.input, JSON.stringify(c.body));
    assert.deepEqual({ outcome: r.outcome, output: r.output }, c.expect);
  });
}

test("classifyV3: a body that is not JSON is unknown", () => {
  assert.equal(classifyV3(put, "<html>").outcome, Outcome.unknown);
});

test("v3Request: cas is a txn comparing the value, putting on success and reading on failure", () => {
  assert.deepEqual(v3Request(cas), {
    path: "/v3/kv/txn",
    body: {
      compare: [{ key: b64("lin3/k0"), target: "VALUE", result: "EQUAL", value: b64("c1-0") }],
      success: [{ request_put: { key: b64("lin3/k0"), value: b64("c1-1") } }],
      failure: [{ request_range: { key: b64("lin3/k0") } }],
    },
  });
  assert.deepEqual(v3Request(get), { path: "/v3/kv/range", body: { key: b64("lin3/k0") } });
});

test("workloadKeys: v2 and v3 keys never share a name, and both gives each API its own", () => {
  const both = workloadKeys(ApiChoice.both, 3);
  assert.equal(both.length, 6);
  assert.equal(new Set(both.map((k) => k.key)).size, 6);
  assert.deepEqual(workloadKeys(ApiChoice.v2, 2).map((k) => k.key), ["lin/k0", "lin/k1"]);
  assert.deepEqual(workloadKeys(ApiChoice.v3, 1), [{ api: "v3", key: "lin3/k0" }]);
  assert.throws(() => parseApiChoice("v4"), /Cannot parse --api/);
});

// The gateway over real HTTP: a scripted server answering each route.
type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;
let handler: Handler = (_req, _body, res) => res.end();
const seen: { path: string; body: unknown }[] = [];
const server = createServer((req, res) => {
  let body = "";
  req.on("data", (c: Buffer) => (body += c.toString()));
  req.on("end", () => {
    seen.push({ path: req.url ?? "", body: JSON.parse(body) as unknown });
    handler(req, body, res);
  });
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
after(() => {
  closeClientConnections();
  server.close();
});

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
};

interface HttpCase {
  name: string;
  input: RegisterInput;
  answer: Handler;
  outcome: Outcome;
  detail?: RegExp;
}

const httpCases: HttpCase[] = [
  { name: "a 200 range is definite", input: get, answer: (_q, _b, res) => json(res, 200, { header, kvs: [kv("lin3/k0", "v")] }), outcome: Outcome.definite },
  {
    name: "code 14 request timed out on a put is unknown",
    input: put,
    answer: (_q, _b, res) => json(res, 503, { error: "etcdserver: request timed out", message: "etcdserver: request timed out", code: 14 }),
    outcome: Outcome.unknown,
    detail: /HTTP 503 code 14: etcdserver: request timed out/,
  },
  {
    name: "code 14 no leader on a txn is unknown, not refused",
    input: cas,
    answer: (_q, _b, res) => json(res, 503, { error: "etcdserver: no leader", message: "etcdserver: no leader", code: 14 }),
    outcome: Outcome.unknown,
    detail: /code 14/,
  },
  { name: "a 501 not served is unknown", input: put, answer: (_q, _b, res) => json(res, 501, { error: "not served", message: "not served", code: 12 }), outcome: Outcome.unknown, detail: /HTTP 501 code 12/ },
  { name: "a connection reset mid-request is unknown", input: put, answer: (req) => req.socket.destroy(), outcome: Outcome.unknown, detail: /ECONNRESET|socket hang up/ },
  { name: "no answer within the timeout is unknown", input: put, answer: () => undefined, outcome: Outcome.unknown, detail: /TIMEOUT/ },
];

for (const c of httpCases) {
  test(`runV3Op: ${c.name}`, async () => {
    handler = c.answer;
    const r = await runV3Op(base, c.input, 300);
    assert.equal(r.outcome, c.outcome, JSON.stringify(r));
    if (c.detail !== undefined) assert.match(r.detail ?? "", c.detail);
  });
}

test("runV3Op: sends JSON with base64 key and value to the route of the operation", async () => {
  handler = (_q, _b, res) => json(res, 200, { header });
  seen.length = 0;
  const r = await runV3Op(base, put, 1000);
  assert.equal(r.outcome, Outcome.definite);
  assert.deepEqual(seen, [{ path: "/v3/kv/put", body: { key: b64("lin3/k0"), value: b64("c1-0") } }]);
});

test("runV3Op: a refused connection is refused (the request never left)", async () => {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", () => r()));
  const port = (probe.address() as { port: number }).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const r = await runV3Op(`http://127.0.0.1:${port}`, put, 1000);
  assert.equal(r.outcome, Outcome.refused);
});

test("probeV3: a gateway answering ranges passes, a 501 not served says why at once", async () => {
  handler = (_q, _b, res) => json(res, 200, { header });
  assert.equal(await probeV3(base, 2000), undefined);
  handler = (_q, _b, res) => json(res, 501, { error: "not served", message: "the v3 API is not served", code: 12 });
  assert.match((await probeV3(base, 2000)) ?? "", /HTTP 501 code 12: the v3 API is not served/);
});
