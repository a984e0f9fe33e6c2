// proto-writer.ts writes what @bufbuild/protobuf's toBinary writes for the same messages:
// the auth records of a bbolt snapshot, alarm keys, lease messages; and a packed repeated
// int64 (the peers' /leases/batch body) as a plain BigInt encoder writes it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, toBinary } from "@bufbuild/protobuf";
import { PermissionSchema, RoleSchema, UserSchema } from "./grpc/gen/etcd/auth/authpb/auth_pb.ts";
import { AlarmMemberSchema, LeaseKeepAliveResponseSchema } from "./grpc/gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { encodeLeaseIds } from "./lease-peer-wire.ts";
import { ProtoWriter } from "./proto-writer.ts";

const INTS = [0n, 1n, 127n, 128n, 16_383n, 16_384n, 2n ** 31n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 63n - 1n, -1n, -(2n ** 53n), -(2n ** 63n)];
const bytes = (s: string): Buffer => Buffer.from(s, "utf8");

test("int64 fields, given as bigint or number: toBinary's bytes (zero left out, negatives ten bytes)", () => {
  for (const id of INTS) {
    for (const ttl of INTS) {
      const want = toBinary(LeaseKeepAliveResponseSchema, create(LeaseKeepAliveResponseSchema, { ID: id, TTL: ttl }));
      assert.deepEqual(new Uint8Array(new ProtoWriter().int64(2, id).int64(3, ttl).finish()), want, `bigint ${id} ${ttl}`);
      if (ttl >= -(2n ** 53n) && ttl <= 2n ** 53n) assert.deepEqual(new Uint8Array(new ProtoWriter().int64(2, id).int64(3, Number(ttl)).finish()), want, `number ttl ${ttl}`);
    }
  }
  for (const [memberID, alarm] of [[0n, 0], [4660n, 1], [2n ** 64n - 1n, 2]] as const) {
    const want = toBinary(AlarmMemberSchema, create(AlarmMemberSchema, { memberID, alarm }));
    assert.deepEqual(new Uint8Array(new ProtoWriter().int64(1, BigInt.asIntN(64, memberID)).int64(2, alarm).finish()), want, `alarm ${memberID}`);
  }
});

test("bytes left out when empty, elements and messages written even when empty, growing past its first buffer: toBinary's bytes", () => {
  const big = Buffer.alloc(70_000, 0x6b);
  for (const name of ["", "root", "用户-🔑", "n".repeat(200)]) {
    for (const roles of [[], [""], ["a", "ключ", "r".repeat(130)]]) {
      for (const noPassword of [undefined, false, true]) {
        const user = create(UserSchema, { name: bytes(name), password: bytes(name === "" ? "" : "$2a$10$hash"), roles, ...(noPassword === undefined ? {} : { options: { noPassword } }) });
        const w = new ProtoWriter().bytes(1, bytes(name)).bytes(2, bytes(name === "" ? "" : "$2a$10$hash"));
        for (const r of roles) w.bytesElement(3, bytes(r));
        if (noPassword !== undefined) w.bytesElement(4, new ProtoWriter().bool(1, noPassword).finish());
        assert.deepEqual(new Uint8Array(w.finish()), toBinary(UserSchema, user), `user ${name.length} ${roles.length} ${noPassword}`);
      }
    }
  }
  const perms = [
    { permType: 0, key: Buffer.alloc(0), rangeEnd: Buffer.alloc(0) },
    { permType: 1, key: bytes("/a"), rangeEnd: bytes("/b") },
    { permType: 2, key: big, rangeEnd: Buffer.from([0]) },
  ];
  const role = create(RoleSchema, { name: bytes("r"), keyPermission: perms.map((p) => create(PermissionSchema, p)) });
  const w = new ProtoWriter().bytes(1, bytes("r"));
  for (const p of perms) w.bytesElement(2, new ProtoWriter().int64(1, p.permType).bytes(2, p.key).bytes(3, p.rangeEnd).finish());
  assert.deepEqual(new Uint8Array(w.finish()), toBinary(RoleSchema, role));
});

test("a packed repeated int64 (the /leases/batch body) as a plain BigInt encoder writes it", () => {
  const varint = (v: bigint): number[] => {
    const out: number[] = [];
    let x = BigInt.asUintN(64, v);
    for (; x >= 0x80n; x >>= 7n) out.push(Number(x & 0x7fn) | 0x80);
    return [...out, Number(x)];
  };
  for (const ids of [[], [5n], INTS, Array.from({ length: 1024 }, (_, i) => 0x694d7a1b2c3d4e5fn + BigInt(i))]) {
    const inner = ids.flatMap(varint);
    assert.deepEqual([...encodeLeaseIds(ids)], [0x0a, ...varint(BigInt(inner.length)), ...inner], `${ids.length} ids`);
  }
});
