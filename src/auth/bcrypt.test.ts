import assert from "node:assert/strict";
import { test } from "node:test";
import { isBcryptHash, verifyBcrypt } from "./bcrypt.ts";
import { verifyPassword } from "./password.ts";

// OpenBSD's and John the Ripper's published vectors, and a hash etcd 3.4.23 stored for
// `user add root:rootpw` (src/server/backup/testdata/etcd-3.4.23.snapshot.db).
const ETCD_ROOT = "$2a$10$yIgbY9TPZ8BfS6XOspxR1.HH0tdnCuXS0LQCYhiqQH2d.8STnII0i";

test("published bcrypt vectors verify; a changed password or hash does not", async () => {
  assert.equal(await verifyBcrypt(Buffer.from("U*U"), "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"), true);
  assert.equal(await verifyBcrypt(Buffer.from(""), "$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s."), true);
  assert.equal(await verifyBcrypt(Buffer.from("U*V"), "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"), false);
  assert.equal(await verifyBcrypt(Buffer.from("U*U"), "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeX"), false);
});

test("etcd's stored hash, through verifyPassword", async () => {
  assert.ok(isBcryptHash(ETCD_ROOT));
  assert.equal(await verifyPassword("rootpw", ETCD_ROOT), true);
  assert.equal(await verifyPassword("rootpX", ETCD_ROOT), false);
});

test("malformed or absurdly costly hashes are refused without work", async () => {
  assert.equal(isBcryptHash("$2a$10$short"), false);
  assert.equal(await verifyBcrypt(Buffer.from("x"), "$2a$31$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"), false);
  assert.equal(await verifyBcrypt(Buffer.from("x"), "$2a$03$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"), false);
});
