import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeCommand, encodeCommand, peekKeySpaceCommand, type Command } from "./request.ts";

const cases: Command[] = [
  { t: "v2", m: 7, id: 1, time: 1.5, r: { method: "PUT", path: "/a", val: "", dir: false, prevValue: "", prevIndex: 0, recursive: false, sorted: false } },
  { t: "v2", m: 7, id: 2, time: 2, r: { method: "PUT", path: "/a", val: "x\ny", dir: true, prevValue: "p", prevIndex: 3, prevExist: false, expiration: 9.25, recursive: true, sorted: true, refresh: true } },
  { t: "v2", m: 7, id: 3, time: 3, r: { method: "DELETE", path: "/", val: "", dir: false, prevValue: "", prevIndex: 0, prevExist: true, recursive: false, sorted: false } },
  { t: "sync", m: 7, id: 4, time: 1234.5 },
  { t: "attr", m: 7, id: 5, time: 1, a: { id: 7, name: "n", clientUrls: ["http://x:1"] } },
];
for (const c of cases) {
  test(`encodeCommand round-trips a ${c.t} command exactly (id ${c.id})`, () => {
    assert.deepEqual(decodeCommand(encodeCommand(c)), c);
  });
}

test("encodeCommand leaves default v2 fields out of the entry", () => {
  const bytes = encodeCommand(cases[0]!);
  assert.equal(Buffer.from(bytes).toString(), '{"t":"v2","m":7,"id":1,"time":1.5,"r":{"method":"PUT","path":"/a"}}');
});

test("decodeCommand refuses bytes that are not a kvctl command", () => {
  assert.throws(() => decodeCommand(Buffer.from("[1,2]")), /Cannot decode log entry/);
});

test("peekKeySpaceCommand reads the proposer and id of v3 key-space commands only", () => {
  const put = encodeCommand({ t: "v3", m: 123456789, id: 42, time: 1, op: { k: "put", r: { key: Buffer.from('"op":{"k":"auth"'), value: Buffer.alloc(3), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false } } });
  assert.deepEqual(peekKeySpaceCommand(put), { t: "v3-head", m: 123456789, id: 42 });
  const grant = encodeCommand({ t: "v3", m: 7, id: 8, time: 1, op: { k: "leaseGrant", id: 2n ** 62n, ttl: 5 } });
  assert.deepEqual(peekKeySpaceCommand(grant), { t: "v3-head", m: 7, id: 8 });
  const auth = encodeCommand({ t: "v3", m: 7, id: 9, time: 1, op: { k: "auth", op: { kind: "authEnable" }, info: null } });
  assert.equal(peekKeySpaceCommand(auth), undefined, "v3 auth lives in the snapshot image: always applied");
  assert.equal(peekKeySpaceCommand(encodeCommand({ t: "sync", m: 7, id: 10, time: 1 })), undefined);
  assert.equal(peekKeySpaceCommand(Buffer.from("{}")), undefined);
});

test("v3 puts travel in binary; JSON puts from older logs still decode", () => {
  const put: Command = {
    t: "v3",
    m: 2 ** 52 + 3,
    id: 77,
    time: Date.UTC(2026, 0, 1),
    op: { k: "put", r: { key: Buffer.from([0, 255, 10]), value: Buffer.alloc(1024, 7), lease: -(2n ** 63n), prevKv: true, ignoreValue: false, ignoreLease: true } },
  };
  const enc = Buffer.from(encodeCommand(put));
  assert.equal(enc[0], 0x01);
  assert.ok(enc.length < 1024 + 48, `${enc.length} bytes for a 1 KiB value`);
  assert.deepStrictEqual(decodeCommand(enc), put);
  const empty: Command = { ...put, op: { k: "put", r: { key: Buffer.alloc(0), value: Buffer.alloc(0), lease: 0n, prevKv: false, ignoreValue: true, ignoreLease: false } } };
  assert.deepStrictEqual(decodeCommand(encodeCommand(empty)), empty);
  // An entry a member wrote before the binary form: the same command, as tagged JSON.
  const json = Buffer.from('{"t":"v3","m":5,"id":6,"time":7,"op":{"k":"put","r":{"key":{"$b":"YQ=="},"value":{"$b":"Yg=="},"lease":{"$n":"0"},"prevKv":false,"ignoreValue":false,"ignoreLease":false}}}');
  assert.deepStrictEqual(decodeCommand(json), { t: "v3", m: 5, id: 6, time: 7, op: { k: "put", r: { key: Buffer.from("a"), value: Buffer.from("b"), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false } } });
  assert.deepEqual(peekKeySpaceCommand(enc), { t: "v3-head", m: 2 ** 52 + 3, id: 77 });
  assert.deepEqual(peekKeySpaceCommand(json), { t: "v3-head", m: 5, id: 6 });
  assert.throws(() => decodeCommand(enc.subarray(0, 20)), /cut short/);
});
