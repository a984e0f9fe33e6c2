import { test } from "node:test";
import assert from "node:assert/strict";
import { GrpcCode, V3Error, V3Errors } from "../api/v3-errors.ts";
import type { Compare, RangeRequest, RequestOp, TxnRequest } from "../store/v3/types.ts";
import { V3AuthState } from "./v3-auth-state.ts";
import { V3PermType, authOldRevision, encodePermission, isPermType, parseV3AuthOp, type V3AuthInfo, type V3AuthOp, type V3PermTypeValue } from "./v3-model.ts";
import { checkDeleteRangeRequest, checkLeaseKeys, checkPutRequest, checkRangeRequest, checkTxnRequest, compareAffine, rangePermitted, unifyIntervals, unifyPermissions, type V3Interval } from "./v3-permissions.ts";
import { mulberry32 } from "../prng.test-helper.ts";

const b = (s: string): Buffer => Buffer.from(s, "latin1");
type P = [V3PermTypeValue, string, string];
const R = V3PermType.READ;
const W = V3PermType.WRITE;
const RW = V3PermType.READWRITE;

function readIntervals(perms: P[]) {
  return unifyPermissions(perms.map(([permType, key, rangeEnd]) => ({ permType, key: b(key), rangeEnd: b(rangeEnd) }))).read;
}

interface IntervalCase {
  name: string;
  perms: P[];
  /** [key, rangeEnd, permitted] — rangeEnd "" is a single key, "\0" is "to the end". */
  requests: Array<[string, string, boolean]>;
}

const intervalCases: IntervalCase[] = [
  { name: "a single-key permission", perms: [[R, "k", ""]], requests: [["k", "", true], ["k2", "", false], ["j", "", false], ["k", "k\0", true], ["k", "l", false], ["k", "\0", false]] },
  {
    name: "a prefix permission [foo, fop)",
    perms: [[R, "foo", "fop"]],
    requests: [["foo", "", true], ["foo/bar", "", true], ["fop", "", false], ["fo", "", false], ["foo/", "foo0", true], ["foo", "fop", true], ["fo", "fop", false], ["foo", "foq", false], ["foo", "\0", false]],
  },
  { name: "a from-key permission [a, \\0)", perms: [[R, "a", "\0"]], requests: [["zzz", "", true], ["\xff\xff", "", true], ["b", "\0", true], ["a", "\0", true], ["\0", "\0", false], ["0", "b", false]] },
  { name: "an all-keys permission [\\0, \\0)", perms: [[R, "\0", "\0"]], requests: [["\0", "\0", true], ["any", "", true], ["a", "z", true]] },
  { name: "adjacent permissions merged", perms: [[R, "a", "c"], [R, "c", "e"]], requests: [["b", "d", true], ["a", "e", true], ["a", "e\0", false], ["c", "", true], ["e", "", false]] },
  { name: "permissions with a gap", perms: [[R, "a", "c"], [R, "d", "e"]], requests: [["b", "d", false], ["a", "c", true], ["d", "e", true], ["c", "", false], ["c\0", "", false]] },
  { name: "overlapping permissions merged", perms: [[R, "b", "c"], [R, "c", "f"], [R, "a", "d"]], requests: [["a", "f", true], ["a", "f\0", false]] },
  { name: "a key permission adjacent to a range", perms: [[R, "a", ""], [R, "a\0", "b"]], requests: [["a", "b", true], ["a", "a\0", true]] },
  { name: "a permission with an empty key (grants nothing, as in etcd)", perms: [[R, "", "\0"]], requests: [["a", "", false], ["\0", "\0", false]] },
  { name: "an inverted permission (grants nothing)", perms: [[R, "b", "a"]], requests: [["a", "", false], ["b", "", false], ["a", "b", false]] },
  { name: "no permission", perms: [], requests: [["a", "", false], ["a", "b", false]] },
  { name: "write-only permissions for a read", perms: [[W, "a", "z"]], requests: [["b", "", false], ["a", "z", false]] },
  { name: "readwrite permissions for a read", perms: [[RW, "a", "z"]], requests: [["b", "", true], ["a", "z", true]] },
  { name: "an inverted request inside a permission", perms: [[R, "a", "z"]], requests: [["m", "b", true]] },
];

for (const c of intervalCases) {
  test(`rangePermitted decides requests under ${c.name}`, () => {
    const ivs = readIntervals(c.perms);
    for (const [key, rangeEnd, want] of c.requests) {
      assert.equal(rangePermitted(ivs, b(key), b(rangeEnd)), want, `[${JSON.stringify(key)}, ${JSON.stringify(rangeEnd)})`);
    }
  });
}

test("unifyIntervals sorts, merges touching and overlapping intervals, and keeps +inf last", () => {
  const ivs = unifyIntervals([
    { begin: b("x"), end: b("") },
    { begin: b("c"), end: b("d") },
    { begin: b("a"), end: b("b") },
    { begin: b("b"), end: b("c") },
    { begin: b("y"), end: b("z") },
  ]);
  assert.deepEqual(ivs.map((iv) => [iv.begin.toString(), iv.end.toString()]), [["a", "d"], ["x", ""]]);
});

// ---- through the state: users, roles, errors ------------------------------------------

const grant = (role: string, permType: V3PermTypeValue, key: string, rangeEnd = ""): V3AuthOp => ({
  kind: "roleGrantPermission",
  name: role,
  perm: encodePermission({ permType, key: b(key), rangeEnd: b(rangeEnd) }),
});

function state(): V3AuthState {
  const s = new V3AuthState();
  const ops: V3AuthOp[] = [
    { kind: "userAdd", name: "root", passwordHash: "h", noPassword: false },
    { kind: "userGrantRole", user: "root", role: "root" },
    { kind: "userAdd", name: "reader", passwordHash: "h", noPassword: false },
    { kind: "userAdd", name: "writer", passwordHash: "h", noPassword: false },
    { kind: "userAdd", name: "both", passwordHash: "h", noPassword: false },
    { kind: "roleAdd", name: "r" },
    { kind: "roleAdd", name: "w" },
    { kind: "roleAdd", name: "rw" },
    { kind: "roleAdd", name: "r2" },
    grant("r", R, "a", "m"),
    grant("r2", R, "m", "t"),
    grant("w", W, "a", "m"),
    grant("rw", RW, "k"),
    { kind: "userGrantRole", user: "reader", role: "r" },
    { kind: "userGrantRole", user: "reader", role: "r2" },
    { kind: "userGrantRole", user: "writer", role: "w" },
    { kind: "userGrantRole", user: "both", role: "rw" },
    { kind: "authEnable" },
  ];
  for (const op of ops) s.apply(op);
  return s;
}

const as = (s: V3AuthState, user: string): V3AuthInfo => ({ user, revision: s.authRevision });

function refuses(fn: () => void, expected: V3Error): void {
  assert.throws(fn, (err: unknown) => err instanceof V3Error && err.message === expected.message && err.code === expected.code);
}

test("read, write and readwrite roles grant what their type says", () => {
  const s = state();
  s.isRangePermitted(as(s, "reader"), b("b"), b(""));
  refuses(() => s.isPutPermitted(as(s, "reader"), b("b")), V3Errors.permissionDenied());
  s.isPutPermitted(as(s, "writer"), b("b"));
  s.isDeleteRangePermitted(as(s, "writer"), b("a"), b("m"));
  refuses(() => s.isRangePermitted(as(s, "writer"), b("b"), b("")), V3Errors.permissionDenied());
  s.isRangePermitted(as(s, "both"), b("k"), b(""));
  s.isPutPermitted(as(s, "both"), b("k"));
  refuses(() => s.isPutPermitted(as(s, "both"), b("k2")), V3Errors.permissionDenied());
});

test("a user's roles combine: two adjacent ranges from two roles cover the range across them", () => {
  const s = state();
  s.isRangePermitted(as(s, "reader"), b("a"), b("t"));
  refuses(() => s.isRangePermitted(as(s, "reader"), b("a"), b("u")), V3Errors.permissionDenied());
});

test("a revoked permission stops granting at once", () => {
  const s = state();
  s.apply({ kind: "roleRevokePermission", role: "r2", key: b("m").toString("base64"), rangeEnd: b("t").toString("base64") });
  refuses(() => s.isRangePermitted(as(s, "reader"), b("n"), b("")), V3Errors.permissionDenied());
});

test("root may do anything; every check passes while auth is disabled, even without a token", () => {
  const s = state();
  s.isRangePermitted(as(s, "root"), b("\0"), b("\0"));
  s.isDeleteRangePermitted(as(s, "root"), b("\0"), b("\0"));
  s.apply({ kind: "authDisable" });
  s.isPutPermitted(null, b("anything"));
  s.isAdminPermitted(null);
});

test("the checks refuse in etcd's order: no token, stale revision, unknown user, no permission", () => {
  const s = state();
  refuses(() => s.isRangePermitted(null, b("b"), b("")), V3Errors.userEmpty());
  refuses(() => s.isRangePermitted({ user: "reader", revision: 0 }, b("b"), b("")), V3Errors.userEmpty());
  refuses(() => s.isRangePermitted({ user: "reader", revision: s.authRevision - 1 }, b("b"), b("")), authOldRevision());
  refuses(() => s.isRangePermitted({ user: "ghost", revision: s.authRevision }, b("b"), b("")), V3Errors.permissionDenied());
  refuses(() => s.isRangePermitted(as(s, "reader"), b("z"), b("")), V3Errors.permissionDenied());
  assert.equal(authOldRevision().code, GrpcCode.InvalidArgument);
});

test("isAdminPermitted distinguishes no token, unknown user and non-root", () => {
  const s = state();
  refuses(() => s.isAdminPermitted(null), V3Errors.userEmpty());
  refuses(() => s.isAdminPermitted({ user: "ghost", revision: 1 }), V3Errors.userNotFound());
  refuses(() => s.isAdminPermitted(as(s, "both")), V3Errors.permissionDenied());
  s.isAdminPermitted(as(s, "root"));
});

// ---- request-level checks ---------------------------------------------------------------

const range = (key: string, rangeEnd = ""): RangeRequest => ({
  key: b(key), rangeEnd: b(rangeEnd), limit: 0, revision: 0, sortOrder: 0, sortTarget: 0, serializable: false, keysOnly: false,
  countOnly: false, minModRevision: 0, maxModRevision: 0, minCreateRevision: 0, maxCreateRevision: 0,
});
const put = (key: string, prevKv = false): RequestOp => ({ put: { key: b(key), value: b("v"), lease: 0n, prevKv, ignoreValue: false, ignoreLease: false } });
const del = (key: string, rangeEnd = "", prevKv = false): RequestOp => ({ deleteRange: { key: b(key), rangeEnd: b(rangeEnd), prevKv } });
const cmp = (key: string, rangeEnd = ""): Compare => ({ target: 0, version: 0, result: 0, key: b(key), rangeEnd: b(rangeEnd) });
const txn = (t: Partial<TxnRequest>): TxnRequest => ({ compare: [], success: [], failure: [], ...t });

interface TxnCase {
  name: string;
  user: string;
  txn: TxnRequest;
  allowed: boolean;
}

const txnCases: TxnCase[] = [
  { name: "an empty txn", user: "reader", txn: txn({}), allowed: true },
  { name: "compares on readable keys and reads", user: "reader", txn: txn({ compare: [cmp("b"), cmp("a", "m")], success: [{ range: range("c") }] }), allowed: true },
  { name: "a compare on an unreadable key", user: "writer", txn: txn({ compare: [cmp("b")], success: [put("b")] }), allowed: false },
  { name: "a put in the failure branch without write", user: "reader", txn: txn({ success: [{ range: range("b") }], failure: [put("b")] }), allowed: false },
  { name: "puts and deletes with write", user: "writer", txn: txn({ success: [put("b"), del("a", "m")], failure: [del("c")] }), allowed: true },
  { name: "a delete with prevKv without read", user: "writer", txn: txn({ success: [del("b", "", true)] }), allowed: false },
  { name: "a put with prevKv without read", user: "writer", txn: txn({ success: [put("b", true)] }), allowed: false },
  { name: "a put with prevKv with readwrite", user: "both", txn: txn({ success: [put("k", true)] }), allowed: true },
  { name: "a nested txn hiding an unreadable range", user: "reader", txn: txn({ success: [{ txn: txn({ failure: [{ range: range("z") }] }) }] }), allowed: false },
  { name: "a nested txn within permissions", user: "reader", txn: txn({ success: [{ txn: txn({ compare: [cmp("n")], success: [{ range: range("a", "t") }] }) }] }), allowed: true },
  { name: "anything for root", user: "root", txn: txn({ compare: [cmp("\0", "\0")], success: [del("\0", "\0", true)] }), allowed: true },
];

for (const c of txnCases) {
  test(`checkTxnRequest ${c.allowed ? "allows" : "refuses"} ${c.name}`, () => {
    const s = state();
    if (c.allowed) checkTxnRequest(s, as(s, c.user), c.txn);
    else refuses(() => checkTxnRequest(s, as(s, c.user), c.txn), V3Errors.permissionDenied());
  });
}

test("request checks: a prevKv put or delete also needs read, lease keys need write", () => {
  const s = state();
  const writer = as(s, "writer");
  checkRangeRequest(s, as(s, "reader"), range("a", "m"));
  checkPutRequest(s, writer, { key: b("b"), prevKv: false });
  refuses(() => checkPutRequest(s, writer, { key: b("b"), prevKv: true }), V3Errors.permissionDenied());
  checkDeleteRangeRequest(s, writer, { key: b("a"), rangeEnd: b("m"), prevKv: false });
  refuses(() => checkDeleteRangeRequest(s, writer, { key: b("a"), rangeEnd: b("m"), prevKv: true }), V3Errors.permissionDenied());
  checkLeaseKeys(s, writer, [b("b"), b("c")]);
  refuses(() => checkLeaseKeys(s, writer, [b("b"), b("x")]), V3Errors.permissionDenied());
});

// ---- differential: the unified intervals against etcd's algorithm on raw intervals ------

/** etcd's Interval.Compare: 0 when q overlaps iv. */
function etcdOverlaps(q: V3Interval, iv: V3Interval): boolean {
  if (compareAffine(q.begin, iv.begin) < 0 && compareAffine(q.end, iv.begin) <= 0) return false;
  return compareAffine(q.begin, iv.end) < 0;
}

/** etcd's intervalTree.Contains, walking every raw interval in begin order. */
function etcdContains(raw: V3Interval[], q: V3Interval): boolean {
  const visited = raw.filter((iv) => etcdOverlaps(q, iv)).sort((x, y) => compareAffine(x.begin, y.begin));
  const first = visited[0];
  if (first === undefined) return false;
  let maxEnd = first.end;
  for (const iv of visited.slice(1)) {
    if (compareAffine(maxEnd, iv.begin) < 0) return false;
    if (compareAffine(iv.end, maxEnd) > 0) maxEnd = iv.end;
  }
  return compareAffine(maxEnd, q.end) >= 0 && compareAffine(first.begin, q.begin) <= 0;
}

test("rangePermitted agrees with etcd's interval-tree algorithm on random permissions", () => {
  const seed = Number(process.env["V3_PERM_SEED"] ?? Date.now() % 1_000_000);
  const rnd = mulberry32(seed);
  const alphabet = ["\0", "a", "b", "\xff"];
  const key = (): string => {
    let s = "";
    const n = Math.floor(rnd() * 3);
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(rnd() * alphabet.length)];
    return s;
  };
  for (let round = 0; round < 2000; round++) {
    const perms: P[] = Array.from({ length: Math.floor(rnd() * 5) }, () => [R, key(), rnd() < 0.3 ? "" : rnd() < 0.2 ? "\0" : key()]);
    const raw: V3Interval[] = [];
    for (const [, k, e] of perms) {
      // etcd inserts every permission, inverted or empty ones included.
      if (e === "") raw.push({ begin: b(k), end: b(k + "\0") });
      else raw.push({ begin: b(k), end: e === "\0" ? b("") : b(e) });
    }
    const ivs = readIntervals(perms);
    for (let i = 0; i < 10; i++) {
      const k = key() || "a";
      const e = rnd() < 0.3 ? "" : rnd() < 0.2 ? "\0" : key();
      const q: V3Interval = e === "" ? { begin: b(k), end: b(k + "\0") } : { begin: b(k), end: e === "\0" ? b("") : b(e) };
      if (compareAffine(q.begin, q.end) >= 0) continue; // inverted requests select no key
      const want = e === "" ? raw.some((iv) => etcdOverlaps(q, iv)) : etcdContains(raw, q);
      assert.equal(rangePermitted(ivs, b(k), b(e)), want, `seed ${seed}: perms ${JSON.stringify(perms)} request [${JSON.stringify(k)}, ${JSON.stringify(e)})`);
    }
  }
});

test("a permission type etcd does not know is stored, listed, kept by the image and the log, and grants nothing", () => {
  const s = state();
  const odd = [9, -1, 0x7fffffff];
  s.apply({ kind: "userAdd", name: "odd", passwordHash: "h", noPassword: false });
  s.apply({ kind: "roleAdd", name: "o" });
  // Through the log's parser, as a member applying the entry reads it.
  for (const [i, t] of odd.entries()) s.apply(parseV3AuthOp(JSON.parse(JSON.stringify(grant("o", t, `k${i}`, i === 0 ? "\0" : "")))));
  s.apply({ kind: "userGrantRole", user: "odd", role: "o" });
  assert.deepEqual(s.getRole("o")?.keyPermissions.map((p) => p.permType), odd);
  for (const [i] of odd.entries()) {
    refuses(() => s.isRangePermitted(as(s, "odd"), b(`k${i}`), b("")), V3Errors.permissionDenied());
    refuses(() => s.isPutPermitted(as(s, "odd"), b(`k${i}`)), V3Errors.permissionDenied());
    refuses(() => s.isDeleteRangePermitted(as(s, "odd"), b(`k${i}`), b("")), V3Errors.permissionDenied());
  }
  refuses(() => s.isRangePermitted(as(s, "odd"), b("zz"), b("")), V3Errors.permissionDenied());
  assert.deepEqual(unifyPermissions([{ permType: 9, key: b("a"), rangeEnd: b("\0") }]), { read: [], write: [] });
  // A snapshot or restart keeps the numbers (the image is JSON in the backend).
  const back = V3AuthState.fromImage(JSON.parse(JSON.stringify(s.toImage())) as unknown);
  assert.deepEqual(back.getRole("o")?.keyPermissions.map((p) => p.permType), odd);
  refuses(() => back.isPutPermitted(as(back, "odd"), b("k1")), V3Errors.permissionDenied());
  // Granting a known type on the same range replaces the unknown one, as etcd's RoleGrantPermission does.
  s.apply(grant("o", RW, "k1"));
  s.isPutPermitted(as(s, "odd"), b("k1"));
  s.isRangePermitted(as(s, "odd"), b("k1"), b(""));
});

test("isPermType takes any int32 and nothing else", () => {
  for (const v of [0, 1, 2, 9, -1, -0x80000000, 0x7fffffff]) assert.equal(isPermType(v), true, String(v));
  for (const v of [2.5, 0x80000000, -0x80000001, "READ", null, undefined, Number.NaN]) assert.equal(isPermType(v), false, String(v));
});
