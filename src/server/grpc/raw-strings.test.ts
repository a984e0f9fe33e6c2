// Strings that are not UTF-8 round-trip byte for byte, as gogoproto's do in etcd 3.4.
import assert from "node:assert/strict";
import { test } from "node:test";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AuthUserAddRequestSchema, AuthUserListResponseSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { decodeRaw, encodeRaw, installRawStrings, isValidUtf8 } from "./raw-strings.ts";

test("any bytes decode to a string that encodes back to them; valid UTF-8 decodes as usual", () => {
  const samples = ["ff61", "c0af", "eda080", "f4908080", "e282", "61e282ac62", "f09f9880", "80", "efbbbf41", ""];
  let seed = 7;
  for (let n = 0; n < 500; n++) {
    const b = Buffer.alloc(n % 17);
    for (let i = 0; i < b.length; i++) b[i] = (seed = (seed * 1103515245 + 12345) % 2 ** 31) & 0xff;
    samples.push(b.toString("hex"));
  }
  for (const hex of samples) {
    const bytes = Buffer.from(hex, "hex");
    const text = decodeRaw(bytes);
    assert.equal(Buffer.from(encodeRaw(text)).toString("hex"), hex, hex);
    const valid = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
    let utf8: string | undefined;
    try {
      utf8 = valid.decode(bytes);
    } catch {
      utf8 = undefined;
    }
    if (utf8 !== undefined) assert.equal(text, utf8, hex);
    assert.equal(isValidUtf8(text), utf8 !== undefined, hex);
  }
  // A lone surrogate that no decode makes is written as U+FFFD, as TextEncoder does.
  assert.equal(Buffer.from(encodeRaw("a\ud800b")).toString("hex"), "61efbfbd62");
});

test("through @bufbuild's codec: a user name of any bytes is read and written back unchanged", () => {
  installRawStrings();
  const req = fromBinary(AuthUserAddRequestSchema, Buffer.from("0a02ff611201fe", "hex"));
  assert.equal(Buffer.from(toBinary(AuthUserListResponseSchema, create(AuthUserListResponseSchema, { users: [req.name, req.password] }))).toString("hex"), "1202ff611201fe");
  assert.equal(Buffer.from(toBinary(AuthUserAddRequestSchema, req)).toString("hex"), "0a02ff611201fe");
  // Valid text is untouched.
  assert.equal(fromBinary(AuthUserAddRequestSchema, Buffer.from("0a03e282ac", "hex")).name, "€");
});
