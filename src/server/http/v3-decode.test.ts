import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { V3Error } from "../../api/v3-errors.ts";
import { readRequestBody } from "./v3-json.ts";
import { messageFields, GatewayDecodeError, type Fields } from "./v3-wire.ts";
import { decodeAlarm, decodeLeaseGrant, decodeMemberId, decodePut, decodeRange, decodeRoleGrantPermission, decodeTxn, decodeUserAdd, decodeWatchRequest } from "./v3-decode.ts";
import { UNARY_ROUTES } from "./v3-handlers.ts";
import type { V3Backend, V3GatewayContext } from "./v3-backend.ts";

function fields(json: string): Fields | undefined {
  const r = readRequestBody(Buffer.from(json));
  assert.ok(!("error" in r), json);
  return messageFields(r.node);
}

const b = (s: string): Buffer => Buffer.from(s, "latin1");

test("decodeRange fills every field, with zero values for absent ones", () => {
  assert.deepEqual(decodeRange(fields('{"key":"YQ=="}')), {
    key: b("a"),
    rangeEnd: b(""),
    limit: 0,
    revision: 0,
    sortOrder: 0,
    sortTarget: 0,
    serializable: false,
    keysOnly: false,
    countOnly: false,
    minModRevision: 0,
    maxModRevision: 0,
    minCreateRevision: 0,
    maxCreateRevision: 0,
  });
});

const rangeCases: Array<{ body: string; want: Partial<ReturnType<typeof decodeRange>> }> = [
  { body: '{"key":"YQ==","rangeEnd":"Yg==","countOnly":true}', want: { rangeEnd: b("b"), countOnly: true } },
  { body: '{"key":"YQ==","sort_order":"DESCEND","sort_target":"MOD"}', want: { sortOrder: 2, sortTarget: 3 } },
  { body: '{"key":"YQ==","sort_order":2,"sort_target":"VERSION"}', want: { sortOrder: 2, sortTarget: 1 } },
  { body: '{"key":"YQ==","sort_order":99,"sort_target":"VERSION"}', want: { sortOrder: 0, sortTarget: 0 } },
  { body: '{"key":"YQ==","limit":-1,"revision":"-3"}', want: { limit: 0, revision: 0 } },
  { body: '{"key":"YQ==","min_mod_revision":"12","maxCreateRevision":11}', want: { minModRevision: 12, maxCreateRevision: 11 } },
  { body: '{"key":"YQ==","key":"Yg=="}', want: { key: b("b") } },
];
for (const { body, want } of rangeCases) {
  test(`decodeRange reads ${body}`, () => {
    const got = decodeRange(fields(body));
    for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k as keyof typeof got], v, k);
  });
}

test("decodePut reads a lease ID as a bigint and the options", () => {
  assert.deepEqual(decodePut(fields('{"key":"YQ==","lease":"123456789","prev_kv":true,"ignoreLease":true}')), {
    key: b("a"),
    value: b(""),
    lease: 123456789n,
    prevKv: true,
    ignoreValue: false,
    ignoreLease: true,
  });
});

test("decodeTxn reads compares (the operand of the target), ops by either name, and empty ops", () => {
  const t = decodeTxn(
    fields(
      '{"compare":[{"key":"YQ==","target":"CREATE","result":"EQUAL","create_revision":"0"},{"key":"YQ==","target":"VERSION","result":"GREATER","version":5},' +
        '{"key":"YQ==","target":"VALUE","value":"eA=="},{"key":"YQ==","target":"MOD","version":3}],' +
        '"success":[{"request_put":{"key":"YQ==","value":"eA=="}},{"requestRange":{"key":"YQ=="}},{}],"failure":[{"request_delete_range":{"key":"YQ=="}}]}',
    ),
  );
  assert.deepEqual(
    t.compare.map((c) => ({ ...c, key: undefined })),
    [
      { target: 1, createRevision: 0, result: 0, key: undefined, rangeEnd: b("") },
      { target: 0, version: 5, result: 1, key: undefined, rangeEnd: b("") },
      { target: 3, value: b("x"), result: 0, key: undefined, rangeEnd: b("") },
      { target: 2, modRevision: 0, result: 0, key: undefined, rangeEnd: b("") }, // a VERSION operand for MOD compares as 0
    ],
  );
  assert.deepEqual(t.success.map((op) => Object.keys(op)), [["put"], ["range"], []]);
  assert.deepEqual(Object.keys(t.failure[0]!), ["deleteRange"]);
});

test("decodeTxn refuses an unknown enum name with etcd's text", () => {
  assert.throws(() => decodeTxn(fields('{"compare":[{"key":"YQ==","target":"NOPE","result":"EQUAL"}]}')), {
    message: 'unknown value "NOPE" for enum etcdserverpb.Compare_CompareTarget',
  });
});

test("decodeTxn takes an unknown enum number and writes the Compare that answers as etcd's compareKV", () => {
  const cmp = (c: string) => decodeTxn(fields(`{"compare":[{"key":"YQ==",${c}}]}`)).compare[0];
  // An unknown result holds for any key found (and, on VALUE, fails for none): version > -1, version > 0.
  assert.deepEqual(cmp('"result":9,"target":"VERSION","version":"1"'), { target: 0, version: -1, result: 1, key: b("a"), rangeEnd: b("") });
  assert.deepEqual(cmp('"result":9,"target":"VALUE","value":"eg=="'), { target: 0, version: 0, result: 1, key: b("a"), rangeEnd: b("") });
  // An unknown target compares as 0: EQUAL holds, the others do not (version < -1).
  assert.deepEqual(cmp('"result":"EQUAL","target":9'), { target: 0, version: -1, result: 1, key: b("a"), rangeEnd: b("") });
  assert.deepEqual(cmp('"result":"NOT_EQUAL","target":9'), { target: 0, version: -1, result: 2, key: b("a"), rangeEnd: b("") });
  assert.throws(() => cmp('"result":2147483648'), GatewayDecodeError);
});

test("decodeAlarm and decodeRoleGrantPermission take a type etcd does not know (it stores it); an unknown alarm action is refused (etcd crashes)", () => {
  assert.deepEqual(decodeAlarm(fields('{"action":1,"memberID":"5","alarm":9}')), { action: 1, memberId: "5", alarm: 9 });
  assert.deepEqual(decodeRoleGrantPermission(fields('{"name":"r","perm":{"permType":9,"key":"YQ=="}}')), { name: "r", perm: { permType: 9, key: b("a"), rangeEnd: b("") } });
  assert.throws(() => decodeAlarm(fields('{"action":9}')), { message: "unknown value 9 for enum etcdserverpb.AlarmRequest_AlarmAction" });
  assert.throws(() => decodeAlarm(fields('{"action":1,"alarm":"NOPE"}')), { message: 'unknown value "NOPE" for enum etcdserverpb.AlarmType' });
});

test("decodeWatchRequest reads create (empty key = \\0, filters, explicit id), cancel and progress", () => {
  assert.deepEqual(decodeWatchRequest(fields('{"create_request":{"filters":["NODELETE",0,7],"watch_id":"7","prevKv":true,"fragment":true}}')), {
    create: { key: b("\0"), rangeEnd: b(""), startRevision: 0, prevKv: true, filters: { noPut: true, noDelete: true }, progressNotify: false },
    watchId: 7,
    fragment: true,
  });
  assert.deepEqual(decodeWatchRequest(fields('{"cancel_request":{"watch_id":"3"}}')), { cancel: 3 });
  assert.deepEqual(decodeWatchRequest(fields('{"progressRequest":{}}')), { progress: true });
  assert.deepEqual(decodeWatchRequest(fields("{}")), { none: true });
  assert.deepEqual(decodeWatchRequest(fields('{"create_request":null}')), { none: true });
});

test("the other decoders read etcd's field names", () => {
  assert.deepEqual(decodeLeaseGrant(fields('{"TTL":"30","ID":4242}')), { ttl: 30, id: 4242n });
  assert.equal(decodeMemberId(fields('{"ID":"18446744073709551615"}')), "18446744073709551615");
  assert.deepEqual(decodeAlarm(fields('{"action":"ACTIVATE","memberID":"1","alarm":"NOSPACE"}')), { action: 1, memberId: "1", alarm: 1 });
  assert.deepEqual(decodeUserAdd(fields('{"name":"u2","options":{"no_password":true}}')), { name: "u2", password: "", noPassword: true });
  assert.deepEqual(decodeRoleGrantPermission(fields('{"name":"r1","perm":{"permType":"WRITE","key":"aw==","rangeEnd":"bA=="}}')), {
    name: "r1",
    perm: { permType: 1, key: b("k"), rangeEnd: b("l") },
  });
});

// ---- every request etcd answered in the golden files --------------------------------------

class ReachedBackend extends Error {}

/** A backend that must not be reached: the edge (decode + checks) is what is under test. */
const unreachable = new Proxy({} as V3Backend, {
  get: (_t, prop) =>
    prop === "header"
      ? () => ({ clusterId: "1", memberId: "2", revision: 1, raftTerm: 2 })
      : () => {
          throw new ReachedBackend(String(prop));
        },
});
const gw: V3GatewayContext = { backend: unreachable, maxRequestBytes: 1572864, maxTxnOps: 128 };

/** What the gateway edge does with a body: a decode error, an edge check error, or a call to the backend. */
async function edge(route: string, body: string): Promise<{ decode: string } | { check: string } | { backend: true }> {
  const parsed = readRequestBody(Buffer.from(body));
  if ("error" in parsed) return { decode: parsed.error };
  try {
    await UNARY_ROUTES.get(route)!(messageFields(parsed.node), { backend: unreachable, ctx: { token: undefined }, gw });
    return { backend: true };
  } catch (err) {
    if (err instanceof ReachedBackend) return { backend: true };
    if (err instanceof GatewayDecodeError) return { decode: err.message };
    if (err instanceof V3Error) return { check: err.message };
    throw err;
  }
}

interface GoldenStep {
  request?: { method: string; target: string; body?: string };
  response?: { status: number; headers: Record<string, string>; body?: { error?: string; code?: number } };
}

const goldenDir = new URL("../../../../shared/conformance/golden/v3/", import.meta.url);
let files: string[] = [];
try {
  files = readdirSync(goldenDir).filter((f) => f.endsWith(".json"));
} catch {
  // The shared golden files are not there (a checkout elsewhere): nothing to replay.
}
for (const file of files) {
  const golden = JSON.parse(readFileSync(new URL(file, goldenDir), "utf8")) as { scenarios: Record<string, { steps: GoldenStep[] }> };
  for (const [name, scenario] of Object.entries(golden.scenarios)) {
    scenario.steps.forEach((step, i) => {
      const req = step.request;
      const res = step.response;
      if (req === undefined || res === undefined || req.method !== "POST") return;
      const route = /^\/v3(?:beta)?\/([^?]*)/.exec(req.target)?.[1];
      if (route === undefined || !UNARY_ROUTES.has(route)) return;
      test(`the gateway edge answers like etcd for ${file}:${name} step ${i} (${req.target})`, async () => {
        const got = await edge(route, req.body ?? "");
        const err = res.body?.error;
        const fromGateway = res.status !== 200 && res.headers.trailer === undefined;
        if (fromGateway) assert.deepEqual(got, { decode: err });
        else if ("decode" in got) assert.fail(`decode error ${got.decode}, etcd answered ${res.status}`);
        else if ("check" in got) assert.equal(got.check, err, "an edge check refused what etcd did not refuse the same way");
      });
    });
  }
}
