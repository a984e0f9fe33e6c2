import { test } from "node:test";
import assert from "node:assert/strict";
import { V3AuthState } from "./v3-auth-state.ts";
import { parseV3AuthImage } from "./v3-image.ts";
import { V3PermType, encodePermission, type V3AuthOp, type V3PermTypeValue } from "./v3-model.ts";

const perm = (name: string, permType: V3PermTypeValue, key: string, rangeEnd = ""): V3AuthOp => ({
  kind: "roleGrantPermission",
  name,
  perm: encodePermission({ permType, key: Buffer.from(key, "latin1"), rangeEnd: Buffer.from(rangeEnd, "latin1") }),
});

/** A mixed history, failures included (they must leave no trace). */
const history: V3AuthOp[] = [
  { kind: "userAdd", name: "root", passwordHash: "$scrypt$root", noPassword: false },
  { kind: "userAdd", name: "ünïcode", passwordHash: "$scrypt$u", noPassword: false },
  { kind: "userAdd", name: "np", passwordHash: null, noPassword: true },
  { kind: "userAdd", name: "root", passwordHash: "dup", noPassword: false },
  { kind: "roleAdd", name: "reader" },
  { kind: "roleAdd", name: "writer" },
  perm("reader", V3PermType.READ, "a", "\0"),
  perm("writer", V3PermType.WRITE, "\xff\x00bin", "\xff\x01"),
  perm("writer", V3PermType.READWRITE, "k"),
  { kind: "userGrantRole", user: "root", role: "root" },
  { kind: "userGrantRole", user: "ünïcode", role: "writer" },
  { kind: "userGrantRole", user: "ünïcode", role: "reader" },
  { kind: "userGrantRole", user: "np", role: "missing" },
  { kind: "authEnable" },
  { kind: "userDelete", name: "root" },
  { kind: "roleRevokePermission", role: "writer", key: "aw==", rangeEnd: "" },
];

function run(ops: V3AuthOp[]): V3AuthState {
  const s = new V3AuthState();
  for (const [i, op] of ops.entries()) {
    try {
      s.apply(op, { index: i + 1 });
    } catch {
      // refused ops are part of the history too
    }
  }
  return s;
}

test("the same op sequence gives byte-identical images on two members", () => {
  const a = run(history);
  const b = run(JSON.parse(JSON.stringify(history)) as V3AuthOp[]);
  assert.equal(JSON.stringify(a.toImage()), JSON.stringify(b.toImage()));
  assert.equal(a.authRevision, b.authRevision);
});

test("toImage is JSON-safe and fromImage restores the same state", () => {
  const a = run(history);
  const image = JSON.parse(JSON.stringify(a.toImage())) as unknown;
  const b = V3AuthState.fromImage(image);
  assert.deepEqual(b.toImage(), a.toImage());
  assert.equal(b.enabled, true);
  assert.equal(b.authRevision, a.authRevision);
  assert.deepEqual(b.getUser("ünïcode")?.roles, ["reader", "writer"]);
  assert.deepEqual(b.getRole("writer")?.keyPermissions[0]?.key, Buffer.from("\xff\x00bin", "latin1"));
  // The restored state behaves the same, e.g. its permission checks.
  const info = { user: "ünïcode", revision: b.authRevision };
  b.isRangePermitted(info, Buffer.from("zzz"), Buffer.from([0]));
  b.isPutPermitted(info, Buffer.from("\xff\x00bin\x05", "latin1"));
});

test("the image lists users and roles in Go's byte order", () => {
  const s = new V3AuthState();
  for (const name of ["b", "\u{1F600}", "\uFFFD", "a"]) s.apply({ kind: "userAdd", name, passwordHash: "h", noPassword: false });
  assert.deepEqual(s.toImage().users.map((u) => u.name), ["a", "b", "\uFFFD", "\u{1F600}"]);
});

test("the image carries no tokens, and fromImage starts with an empty token table", () => {
  const s = run(history);
  s.apply({ kind: "userAdd", name: "t", passwordHash: "h", noPassword: false });
  s.apply({ kind: "authenticate", name: "t", simpleTokenPrefix: "P", time: 0, checkedRevision: s.authRevision }, { index: 99 });
  assert.equal(s.tokens.size, 1);
  assert.doesNotMatch(JSON.stringify(s.toImage()), /P\.99/);
  assert.equal(V3AuthState.fromImage(s.toImage()).tokens.size, 0);
});

interface BadImage {
  name: string;
  mutate: (img: Record<string, unknown>) => void;
  message: RegExp;
}

const badImages: BadImage[] = [
  { name: "an unknown version", mutate: (i) => (i["version"] = 2), message: /unknown image version/ },
  { name: "a revision of 0", mutate: (i) => (i["authRevision"] = 0), message: /authRevision/ },
  { name: "enabled without root", mutate: (i) => (i["users"] = []), message: /without a root user/ },
  { name: "a user twice", mutate: (i) => (i["users"] = [...(i["users"] as unknown[]), (i["users"] as unknown[])[0]]), message: /appears twice/ },
  { name: "unsorted roles of a user", mutate: (i) => ((i["users"] as Array<Record<string, unknown>>)[2]!["roles"] = ["writer", "reader"]), message: /sorted set/ },
  { name: "a missing hash without noPassword", mutate: (i) => ((i["users"] as Array<Record<string, unknown>>)[2]!["passwordHash"] = null), message: /no password hash/ },
  { name: "a permission type that is no int32", mutate: (i) => (((i["roles"] as Array<Record<string, unknown>>)[0]!["keyPermissions"] as Array<Record<string, unknown>>)[0]!["permType"] = "READ"), message: /malformed/ },
  { name: "a key that is not base64", mutate: (i) => (((i["roles"] as Array<Record<string, unknown>>)[0]!["keyPermissions"] as Array<Record<string, unknown>>)[0]!["key"] = "*"), message: /malformed key/ },
];

for (const c of badImages) {
  test(`fromImage refuses ${c.name}`, () => {
    const img = JSON.parse(JSON.stringify(run(history).toImage())) as Record<string, unknown>;
    c.mutate(img);
    assert.throws(() => parseV3AuthImage(img), c.message);
    assert.throws(() => V3AuthState.fromImage(img), c.message);
  });
}

test("recovery in place keeps tokens only of users unchanged in the image", () => {
  const s = new V3AuthState();
  const setup: V3AuthOp[] = [
    { kind: "userAdd", name: "root", passwordHash: "h", noPassword: false },
    { kind: "userGrantRole", user: "root", role: "root" },
    { kind: "userAdd", name: "keep", passwordHash: "h", noPassword: false },
    { kind: "userAdd", name: "gone", passwordHash: "h", noPassword: false },
    { kind: "userAdd", name: "newpw", passwordHash: "h", noPassword: false },
    { kind: "authEnable" },
  ];
  for (const op of setup) s.apply(op);
  // The leader's state, further along.
  const leader = V3AuthState.fromImage(s.toImage());
  leader.apply({ kind: "userDelete", name: "gone" });
  leader.apply({ kind: "userChangePassword", name: "newpw", passwordHash: "h2" });
  for (const [i, name] of ["keep", "gone", "newpw"].entries()) {
    s.apply({ kind: "authenticate", name, simpleTokenPrefix: name, time: 0, checkedRevision: s.authRevision }, { index: i + 1 });
  }
  s.recovery(leader.toImage());
  assert.equal(s.authInfoOf("keep.1", 1).user, "keep");
  assert.throws(() => s.authInfoOf("gone.2", 1), /invalid auth token/);
  assert.throws(() => s.authInfoOf("newpw.3", 1), /invalid auth token/);
  // An image with auth disabled drops them all.
  leader.apply({ kind: "authDisable" });
  s.recovery(leader.toImage());
  assert.equal(s.tokens.size, 0);
});
