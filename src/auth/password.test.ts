import { test } from "node:test";
import assert from "node:assert/strict";
import { hashPassword, verifyPassword, PasswordVerifier, DEFAULT_SCRYPT_COST, scryptCostForBcrypt } from "./password.ts";

// A cheap cost keeps the folder's tests fast; the default cost is exercised once below.
const cheap = { cost: { log2N: 10, r: 8, p: 1 } };

test("hashPassword salts: the same password gives two different hashes that both verify", async () => {
  const a = await hashPassword("s3cret", cheap);
  const b = await hashPassword("s3cret", cheap);
  assert.notEqual(a, b);
  assert.match(a, /^\$scrypt\$ln=10,r=8,p=1\$[A-Za-z0-9+/]+=*\$[A-Za-z0-9+/]+=*$/);
  assert.equal(await verifyPassword("s3cret", a), true);
  assert.equal(await verifyPassword(Buffer.from("s3cret"), b), true);
});

test("hashPassword never contains the password", async () => {
  const h = await hashPassword("visible-password", cheap);
  assert.equal(h.includes("visible-password"), false);
  assert.equal(h.includes(Buffer.from("visible-password").toString("base64")), false);
});

test("verifyPassword is false for a wrong password, an empty one, and non-UTF-8 bytes", async () => {
  const h = await hashPassword("pw", cheap);
  assert.equal(await verifyPassword("pW", h), false);
  assert.equal(await verifyPassword("", h), false);
  assert.equal(await verifyPassword(Buffer.from([0x70, 0x77, 0xff]), h), false);
});

const malformed = [
  "",
  "plain",
  "$scrypt$ln=10,r=8,p=1$c2FsdHNhbHQ=",
  "$scrypt$ln=30,r=8,p=1$c2FsdHNhbHRzYWx0$" + Buffer.alloc(32).toString("base64"),
  "$scrypt$ln=10,r=8,p=1$c2FsdA==$" + Buffer.alloc(32).toString("base64"),
  "$bcrypt$ln=10,r=8,p=1$c2FsdHNhbHRzYWx0$" + Buffer.alloc(32).toString("base64"),
  "$scrypt$ln=7,r=8,p=1$c2FsdHNhbHRzYWx0$" + Buffer.alloc(32).toString("base64"),
  "$scrypt$ln=10,r=8,p=1025$c2FsdHNhbHRzYWx0$" + Buffer.alloc(32).toString("base64"),
  "$scrypt$ln=10,r=8,p=0$c2FsdHNhbHRzYWx0$" + Buffer.alloc(32).toString("base64"),
];

for (const h of malformed) {
  test(`verifyPassword is false (no throw) for the malformed hash ${JSON.stringify(h.slice(0, 30))}`, async () => {
    assert.equal(await verifyPassword("pw", h), false);
  });
}

test("the default cost is scrypt N=2^14 and verifies", async () => {
  assert.deepEqual({ ...DEFAULT_SCRYPT_COST }, { log2N: 14, r: 8, p: 1 });
  const h = await hashPassword("pw");
  assert.match(h, /^\$scrypt\$ln=14,r=8,p=1\$/);
  assert.equal(await verifyPassword("pw", h), true);
});

test("--bcrypt-cost maps to scrypt work that doubles per step: N first, then p once N reaches 2^16", () => {
  const at = (c: number): string => {
    const x = scryptCostForBcrypt(c);
    return `ln=${x.log2N},r=${x.r},p=${x.p}`;
  };
  assert.equal(at(4), "ln=8,r=8,p=1");
  assert.deepEqual(scryptCostForBcrypt(10), { ...DEFAULT_SCRYPT_COST }, "etcd's default cost is kvctl's default");
  assert.equal(at(12), "ln=16,r=8,p=1");
  assert.equal(at(13), "ln=16,r=8,p=2");
  assert.equal(at(22), "ln=16,r=8,p=1024");
  assert.equal(at(31), "ln=16,r=8,p=1024", "capped: costs above 22 hash as 22");
  for (let c = 4; c < 22; c++) {
    const a = scryptCostForBcrypt(c);
    const b = scryptCostForBcrypt(c + 1);
    assert.equal(2 ** b.log2N * b.p, 2 * 2 ** a.log2N * a.p, `cost ${c + 1} is twice the work of ${c}`);
  }
  for (const bad of [3, 32, 0, 10.5, Number.NaN]) assert.throws(() => scryptCostForBcrypt(bad), RangeError);
});

test("hashes made at any cost verify, whatever the cost new hashes use (the stored form carries it)", async () => {
  const low = await hashPassword("pw", { cost: scryptCostForBcrypt(4) });
  assert.match(low, /^\$scrypt\$ln=8,r=8,p=1\$/);
  const wide = await hashPassword("pw", { cost: { log2N: 8, r: 8, p: 16 } });
  assert.match(wide, /^\$scrypt\$ln=8,r=8,p=16\$/);
  for (const h of [low, wide]) {
    assert.equal(await verifyPassword("pw", h), true);
    assert.equal(await verifyPassword("pW", h), false);
  }
});

/** A verifier whose slow check is counted. */
function counted(capacity?: number): { v: PasswordVerifier; calls: () => number } {
  let n = 0;
  const v = new PasswordVerifier({
    ...(capacity === undefined ? {} : { capacity }),
    check: async (pw, encoded) => {
      n++;
      return verifyPassword(pw, encoded);
    },
  });
  return { v, calls: () => n };
}

const token = (user: string, pw: string): string => "Basic " + Buffer.from(`${user}:${pw}`).toString("base64");

test("PasswordVerifier pays the KDF once per distinct credential", async () => {
  const { v, calls } = counted();
  const h = await hashPassword("pw", cheap);
  const pw = Buffer.from("pw");
  const key = v.tokenKey(token("alice", "pw"));
  for (let i = 0; i < 50; i++) assert.equal(await v.verify(key, "alice", pw, h), true);
  assert.equal(calls(), 1);
  assert.equal(v.cachedUser(key, () => h), "alice");
});

test("PasswordVerifier shares one derivation between concurrent checks of one credential", async () => {
  const { v, calls } = counted();
  const h = await hashPassword("pw", cheap);
  const pw = Buffer.from("pw");
  const key = v.tokenKey(token("alice", "pw"));
  const results = await Promise.all(Array.from({ length: 16 }, () => v.verify(key, "alice", pw, h)));
  assert.ok(results.every(Boolean));
  assert.equal(calls(), 1);
});

test("PasswordVerifier does not cache failures", async () => {
  const { v, calls } = counted();
  const h = await hashPassword("pw", cheap);
  const bad = Buffer.from("nope");
  const key = v.tokenKey(token("alice", "nope"));
  assert.equal(await v.verify(key, "alice", bad, h), false);
  assert.equal(await v.verify(key, "alice", bad, h), false);
  assert.equal(calls(), 2);
  assert.equal(v.size, 0);
  assert.equal(v.cachedUser(key, () => h), undefined);
});

test("PasswordVerifier invalidates an entry when the stored hash changes (password change)", async () => {
  const { v, calls } = counted();
  const h1 = await hashPassword("pw", cheap);
  const h2 = await hashPassword("new", cheap);
  const pw = Buffer.from("pw");
  const key = v.tokenKey(token("alice", "pw"));
  assert.equal(await v.verify(key, "alice", pw, h1), true);
  assert.equal(v.cachedUser(key, () => h2), undefined);
  assert.equal(await v.verify(key, "alice", pw, h2), false, "the old password no longer works");
  assert.equal(calls(), 2);
  assert.equal(v.cachedUser(key, () => h1), undefined, "the stale entry was dropped");
});

test("PasswordVerifier invalidates an entry when the user is gone", async () => {
  const { v } = counted();
  const h = await hashPassword("pw", cheap);
  const key = v.tokenKey(token("alice", "pw"));
  await v.verify(key, "alice", Buffer.from("pw"), h);
  assert.equal(v.cachedUser(key, () => undefined), undefined);
  assert.equal(v.size, 0);
});

test("PasswordVerifier answers false for an unknown user after doing the same work", async () => {
  const { v, calls } = counted();
  const pw = Buffer.from("pw");
  assert.equal(await v.verify(v.tokenKey(token("ghost", "pw")), "ghost", pw, undefined), false);
  assert.equal(calls(), 1);
});

test("PasswordVerifier keeps at most `capacity` credentials, evicting the least recently used", async () => {
  const { v } = counted(2);
  const h = await hashPassword("pw", cheap);
  const pw = Buffer.from("pw");
  const [ka, kb, kc] = ["a", "b", "c"].map((u) => v.tokenKey(token(u, "pw"))) as [string, string, string];
  await v.verify(ka, "a", pw, h);
  await v.verify(kb, "b", pw, h);
  assert.equal(v.cachedUser(ka, () => h), "a"); // a is now the most recent
  await v.verify(kc, "c", pw, h);
  assert.equal(v.size, 2);
  assert.equal(v.cachedUser(kb, () => h), undefined, "b was the least recently used");
  assert.equal(v.cachedUser(ka, () => h), "a");
  assert.equal(v.cachedUser(kc, () => h), "c");
});

test("PasswordVerifier.forgetUser drops only that user's credentials", async () => {
  const { v } = counted();
  const h = await hashPassword("pw", cheap);
  const pw = Buffer.from("pw");
  const ka = v.tokenKey(token("a", "pw"));
  const kab = v.tokenKey(token("ab", "pw"));
  await v.verify(ka, "a", pw, h);
  await v.verify(kab, "ab", pw, h);
  v.forgetUser("a");
  assert.equal(v.cachedUser(ka, () => h), undefined);
  assert.equal(v.cachedUser(kab, () => h), "ab");
});

test("token keys differ per token, are keyed per process, and hold no clear credential", () => {
  const v = new PasswordVerifier();
  const t = token("alice", "pw");
  const k = v.tokenKey(t);
  assert.equal(k, v.tokenKey(t));
  assert.notEqual(k, v.tokenKey(token("alice", "pw2")));
  assert.equal(k.includes(t.slice(6)), false);
  assert.notEqual(k, new PasswordVerifier().tokenKey(t), "keyed per process");
});

test("PasswordVerifier: a shared check dropped for one caller's signal is started again for the other", async () => {
  let calls = 0;
  const verifier = new PasswordVerifier({
    check: (_pw, _enc, opts) => {
      calls++;
      if (calls > 1) return Promise.resolve(true);
      return new Promise<boolean>((_resolve, reject) => opts?.signal?.addEventListener("abort", () => reject(opts.signal?.reason as Error)));
    },
  });
  const key = verifier.tokenKey("same credentials");
  const ctl = new AbortController();
  const first = verifier.verify(key, "u", Buffer.from("pw"), "stored", ctl.signal);
  const second = verifier.verify(key, "u", Buffer.from("pw"), "stored");
  const reason = new Error("deadline");
  ctl.abort(reason);
  await assert.rejects(first, (err: unknown) => err === reason);
  assert.equal(await second, true);
  assert.equal(calls, 2);
});
