// Enum numbers etcd 3.4 does not know, read as its Go code reads them (convert.ts). The
// expected answers were recorded from etcd 3.4.23 (the same Txn and Range bytes sent over
// gRPC with key "a" present and "zz" absent: test/integration/grpc-decode.test.ts).
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary } from "@bufbuild/protobuf";
import type { StoredRecord } from "../../store/v3/key-index.ts";
import { keyId, spanContains } from "../../store/v3/keys.ts";
import { applyCompare, type TxnReadView } from "../../store/v3/txn.ts";
import { alarmAction, alarmType, permission, rangeRequest, txnRequest } from "./convert.ts";
import { decodeRangeRequest } from "./fast-codec.ts";
import { PermissionSchema, type Permission_Type } from "./gen/etcd/auth/authpb/auth_pb.ts";
import { RangeRequestSchema, TxnRequestSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";

const A = { value: Buffer.from("b"), createRevision: 2, main: 2, version: 1, lease: 0n } as unknown as StoredRecord;
const view: TxnReadView = {
  revision: 3,
  firstRevision: -1,
  visible: (span) => (spanContains(span, keyId(Buffer.from("a"))) ? [A] : []),
  leaseExists: () => true,
};

/** [TxnRequest with one compare (hex), whether etcd 3.4.23's txn succeeded]. */
const COMPARES: Array<[string, boolean]> = [
  ["0a0508091a0161", true], // result 9, VERSION, "a"
  ["0a07080110091a0161", false], // GREATER, target 9, "a"
  ["0a0510091a0161", true], // EQUAL, target 9, "a"
  ["0a0610091a027a7a", true], // EQUAL, target 9, "zz" (absent)
  ["0a08080310091a027a7a", false], // NOT_EQUAL, target 9, "zz"
  ["0a07080910031a0161", true], // result 9, VALUE, "a"
  ["0a08080910031a027a7a", false], // result 9, VALUE, "zz": VALUE on no key fails
  ["0a08080910011a027a7a", true], // result 9, CREATE, "zz"
];

test("a compare with an unknown result or target answers as etcd's compareKV", () => {
  for (const [hex, want] of COMPARES) {
    const req = txnRequest(fromBinary(TxnRequestSchema, Buffer.from(hex, "hex")));
    assert.equal(applyCompare(view, req.compare[0]!), want, hex);
    assert.deepEqual(req.compare[0]!.key, Buffer.from(fromBinary(TxnRequestSchema, Buffer.from(hex, "hex")).compare[0]!.key), "the key stays, for the permission check");
  }
});

test("an unknown sort order sorts nothing (key order), whatever the target; both readers agree", () => {
  // [sort_order, sort_target] -> [order, target] given to the store
  const cases: Array<[number, number, number, number]> = [
    [9, 2, 0, 0],
    [9, 9, 0, 0],
    [1, 2, 1, 2],
    [0, 3, 0, 3],
    [2, 9, 2, 0],
  ];
  for (const [order, target, wantOrder, wantTarget] of cases) {
    const bytes = Buffer.from([0x0a, 0x01, 0x61, 0x28, order, 0x30, target]);
    const slow = rangeRequest(fromBinary(RangeRequestSchema, bytes));
    const fast = decodeRangeRequest(bytes);
    assert.deepEqual([slow.sortOrder, slow.sortTarget], [wantOrder, wantTarget], `${order}/${target}`);
    assert.deepEqual([fast?.sortOrder, fast?.sortTarget], [wantOrder, wantTarget], `fast ${order}/${target}`);
  }
  // The order may come after the target on the wire.
  const late = decodeRangeRequest(Buffer.from("0a016130022809", "hex"));
  assert.deepEqual([late?.sortOrder, late?.sortTarget], [0, 0]);
});

test("alarm and permission types etcd does not know are taken as numbers; an unknown alarm action is still refused", () => {
  assert.equal(alarmType(9), 9);
  assert.equal(alarmType(-1), -1);
  assert.equal(permission(create(PermissionSchema, { permType: 9 as Permission_Type, key: Buffer.from("a") })).permType, 9);
  // etcd 3.4.23 panics on an unknown action (a nil response): kvctl refuses it.
  assert.throws(() => alarmAction(9), /etcdserver: unknown value 9 for enum etcdserverpb.AlarmRequest_AlarmAction/);
});
