// The JSON gateway takes an enum number etcd does not know as etcd 3.4's does (jsonpb takes
// any int32 given as a number) and the member then evaluates or stores it as etcd: unknown
// Compare results and targets, alarm types, permission types. The expected answers were
// recorded from etcd 3.4.23's gateway with the same requests (headers left out).
import { test } from "node:test";
import assert from "node:assert/strict";
import { startServer } from "../helpers/server.ts";

const b64 = (s: string): string => Buffer.from(s).toString("base64");

test("unknown enum numbers through the gateway: answered as etcd 3.4.23's gateway answers them", async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const call = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${server.url}/v3/${path}`, { method: "POST", body: JSON.stringify(body) });
    const json = (await res.json()) as Record<string, unknown>;
    delete json["header"];
    return json;
  };
  await call("kv/put", { key: b64("a"), value: b64("1") });
  const txn = (key: string, c: Record<string, unknown>) => call("kv/txn", { compare: [{ key: b64(key), ...c }] });
  const cases: Array<[Record<string, unknown>, boolean, boolean]> = [
    // compare, succeeded on the key "a" (version 1), on the missing "zz": as etcd answered
    [{ result: 9, target: 0, version: "1" }, true, true],
    [{ result: 1, target: 9 }, false, false],
    [{ result: 0, target: 9 }, true, true],
    [{ result: 9, target: "VALUE", value: b64("z") }, true, false],
    [{ result: 9, target: 3, value: b64("z") }, true, false],
  ];
  for (const [c, onA, onMissing] of cases) {
    assert.deepEqual(await txn("a", c), onA ? { succeeded: true } : {}, `${JSON.stringify(c)} on a key`);
    assert.deepEqual(await txn("zz", c), onMissing ? { succeeded: true } : {}, `${JSON.stringify(c)} on no key`);
  }
  const nope = 'unknown value "NOPE" for enum etcdserverpb.Compare_CompareResult';
  assert.deepEqual(await txn("a", { result: "NOPE" }), { error: nope, message: nope, code: 3 });

  const alarm9 = { alarms: [{ memberID: "5", alarm: 9 }] };
  assert.deepEqual(await call("maintenance/alarm", { action: 1, memberID: "5", alarm: 9 }), alarm9);
  assert.deepEqual(await call("maintenance/alarm", { action: 0, alarm: 9 }), alarm9);
  assert.deepEqual(await call("maintenance/alarm", { action: 0 }), alarm9);
  // A put still works: the unknown alarm is not NOSPACE.
  assert.deepEqual(await call("kv/put", { key: b64("b"), value: b64("2") }), {});
  assert.deepEqual(await call("maintenance/alarm", { action: 2, memberID: "5", alarm: 9 }), alarm9);
  assert.deepEqual(await call("maintenance/alarm", { action: 0 }), {});

  assert.deepEqual(await call("auth/role/add", { name: "r" }), {});
  assert.deepEqual(await call("auth/role/grant", { name: "r", perm: { permType: 9, key: b64("a") } }), {});
  assert.deepEqual(await call("auth/role/get", { role: "r" }), { perm: [{ permType: 9, key: b64("a") }] });
  // etcd logs the enum's String(): the number for a type it does not know.
  assert.match(server.logs(), /"msg":"alarm raised","alarm":"9"/);
});
