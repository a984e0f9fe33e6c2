import { test } from "node:test";
import assert from "node:assert/strict";
import { V3PermType, decodePermission, encodePermission, parseV3AuthOp, type V3AuthOp } from "./v3-model.ts";

const everyKind: V3AuthOp[] = [
  { kind: "authEnable" },
  { kind: "authDisable" },
  { kind: "authenticate", name: "u", simpleTokenPrefix: "abc", time: 1_700_000_000_000, checkedRevision: 3 },
  { kind: "userAdd", name: "u", passwordHash: "$scrypt$x", noPassword: false },
  { kind: "userAdd", name: "np", passwordHash: null, noPassword: true },
  { kind: "userDelete", name: "u" },
  { kind: "userChangePassword", name: "u", passwordHash: "$scrypt$y" },
  { kind: "userGrantRole", user: "u", role: "r" },
  { kind: "userRevokeRole", name: "u", role: "r" },
  { kind: "userGet", name: "u" },
  { kind: "userList" },
  { kind: "roleAdd", name: "r" },
  { kind: "roleDelete", role: "r" },
  { kind: "roleGet", role: "r" },
  { kind: "roleList" },
  { kind: "roleGrantPermission", name: "r", perm: encodePermission({ permType: V3PermType.READWRITE, key: Buffer.from([0xff, 0]), rangeEnd: Buffer.from([0]) }) },
  { kind: "roleRevokePermission", role: "r", key: "aw==", rangeEnd: "" },
];

for (const op of everyKind) {
  test(`parseV3AuthOp round-trips ${op.kind} through JSON`, () => {
    assert.deepEqual(parseV3AuthOp(JSON.parse(JSON.stringify(op))), op);
  });
}

const malformed: Array<[string, unknown]> = [
  ["a non-object", "userList"],
  ["an unknown kind", { kind: "userFly" }],
  ["a missing name", { kind: "userDelete" }],
  ["a hash with noPassword", { kind: "userAdd", name: "u", passwordHash: "h", noPassword: true }],
  ["no hash without noPassword", { kind: "userAdd", name: "u", passwordHash: null, noPassword: false }],
  ["a permission type that is no int32", { kind: "roleGrantPermission", name: "r", perm: { permType: 1.5, key: "", rangeEnd: "" } }],
  ["a key that is not base64", { kind: "roleRevokePermission", role: "r", key: "k!", rangeEnd: "" }],
  ["a token prefix with a dot", { kind: "authenticate", name: "u", simpleTokenPrefix: "a.b", time: 0, checkedRevision: 1 }],
  ["a negative time", { kind: "authenticate", name: "u", simpleTokenPrefix: "p", time: -1, checkedRevision: 1 }],
];

for (const [name, v] of malformed) {
  test(`parseV3AuthOp refuses ${name}`, () => {
    assert.throws(() => parseV3AuthOp(v), /Cannot parse v3 auth op/);
  });
}

test("permissions encode keys as base64 and decode back to the same bytes", () => {
  const p = { permType: V3PermType.READ, key: Buffer.from("k\u00e9y"), rangeEnd: Buffer.alloc(0) };
  const wire = encodePermission(p);
  assert.deepEqual(wire, { permType: 0, key: Buffer.from("k\u00e9y").toString("base64"), rangeEnd: "" });
  assert.deepEqual(decodePermission(wire), p);
});
