import assert from "node:assert/strict";
import { test } from "node:test";
import { setImmediate } from "node:timers/promises";
import { spawnSync } from "node:child_process";
import { Worker } from "node:worker_threads";
import { BCRYPT_DECOY_HASH, bcryptHash, bcryptHashPart, bcryptStatus, configureBcrypt, isBcryptHash, setBcryptWarn, verifyBcrypt } from "./bcrypt.ts";
import { BCRYPT_WORKER_SOURCE, BcryptPool, BcryptWorkerUnavailableError } from "./bcrypt-pool.ts";
import { bcryptCore } from "./bcrypt-core.ts";
import { PasswordVerifier, hashPassword, hashV3Password, verifyPassword } from "./password.ts";

// OpenBSD's and John the Ripper's published vectors, and a hash etcd 3.4.23 stored for
// `user add root:rootpw` (src/server/backup/testdata/etcd-3.4.23.snapshot.db).
const ETCD_ROOT = "$2a$10$yIgbY9TPZ8BfS6XOspxR1.HH0tdnCuXS0LQCYhiqQH2d.8STnII0i";

// Made by golang.org/x/crypto/bcrypt's GenerateFromPassword (Debian's golang-golang-x-crypto-dev,
// go 1.19), the code etcd 3.4 hashes with. The 80-byte password shows Go reading only 72 bytes.
const GO_PAIRS: ReadonlyArray<readonly [string, string]> = [
  ["s3cret", "$2a$06$x/Q3AGBEIA5p5i15uYLO7eB3Q1gV493J/kulkibVhAzcq5GjruFwK"],
  ["", "$2a$06$OiQWyph6ak8Hf9hfqFw2cu3IFWPfymSvkJ3.B7v.dbA2Gz2JHFBDK"],
  ["pässwörd ünïcode", "$2a$06$tr0BfQS0SO7zrlP42LMUbOwneZOXPfZxdAizryDSccbnW3aIMxcc6"],
  ["0123456789".repeat(8), "$2a$06$IV3m.0saZM.p30o2lahFOuMy3tQFUJkir8M21xzTDNe/AwY26RJli"],
];

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

test("Go-made hashes verify; kvctl computes Go's hash part from Go's salt (what Go's compare does with kvctl's)", async () => {
  for (const [pw, h] of GO_PAIRS) {
    assert.equal(await verifyPassword(pw, h), true, JSON.stringify(pw));
    assert.equal(await verifyPassword(pw + "x", h), pw.length >= 72, `${JSON.stringify(pw)} + x`);
  }
  assert.equal(await verifyPassword("0123456789".repeat(8).slice(0, 72), GO_PAIRS[3]![1]), true, "bytes past 72 are not read");
  assert.equal(await verifyPassword("0123456789".repeat(8).slice(0, 71), GO_PAIRS[3]![1]), false);
});

test("bcryptHash / hashV3Password: Go's $2a$ form at the cost asked, salted, verifying by itself and through the verifier", async () => {
  const a = await hashV3Password("s3cret", 6);
  const b = await hashV3Password(Buffer.from("s3cret"), 6);
  assert.match(a, /^\$2a\$06\$[./A-Za-z0-9]{53}$/);
  assert.notEqual(a, b);
  assert.equal(a.includes("s3cret"), false);
  for (const h of [a, b]) {
    assert.equal(await verifyPassword("s3cret", h), true);
    assert.equal(await verifyPassword("s3creT", h), false);
  }
  // A fresh hash's parts recompute to themselves: the salt is a canonical encoding.
  const salt = a.slice(7, 29);
  assert.equal(await bcryptHashPart(Buffer.from("s3cret"), 6, Buffer.from(decodeSalt(salt))), a.slice(29));
  let checks = 0;
  const verifier = new PasswordVerifier({ check: (pw, enc) => (checks++, verifyPassword(pw, enc)) });
  const key = verifier.tokenKey("Basic dTpzM2NyZXQ=");
  assert.equal(await verifier.verify(key, "u", Buffer.from("s3cret"), a), true);
  assert.equal(await verifier.verify(key, "u", Buffer.from("s3cret"), a), true);
  assert.equal(checks, 1, "the second check came from the cache");
  assert.equal(await verifier.verify(verifier.tokenKey("other"), "u", Buffer.from("wrong"), a), false);
});

test("costs are clamped to 4..20; stored hashes outside them are refused without work", async () => {
  assert.match(await bcryptHash(Buffer.from("x"), 3), /^\$2a\$04\$/);
  assert.equal(isBcryptHash("$2a$10$short"), false);
  assert.equal(await verifyBcrypt(Buffer.from("x"), "$2a$31$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"), false);
  assert.equal(await verifyBcrypt(Buffer.from("x"), "$2a$21$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"), false);
  assert.equal(await verifyBcrypt(Buffer.from("x"), "$2a$03$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"), false);
  assert.ok(isBcryptHash(BCRYPT_DECOY_HASH));
  assert.equal(await verifyPassword("", BCRYPT_DECOY_HASH), false);
});

/** Counts event-loop turns until `done` resolves. */
async function loopTurnsDuring<T>(work: Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let finished = false;
  const ticker = (async () => {
    while (!finished) {
      turns++;
      await setImmediate();
    }
  })();
  const value = await work.finally(() => {
    finished = true;
  });
  await ticker;
  return { value, turns };
}

test("without workers a hash yields to the event loop while it works, and jobs run one at a time", async (t) => {
  await configureBcrypt({ workers: 0 });
  t.after(() => configureBcrypt({}));
  const order: string[] = [];
  // Cost 8 is 256 key-schedule rounds: 16 slices.
  const first = bcryptHash(Buffer.from("a"), 8).then(() => order.push("first"));
  const second = verifyBcrypt(Buffer.from("U*U"), "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW").then((ok) => order.push(`second:${ok}`));
  const { turns } = await loopTurnsDuring(Promise.all([first, second]));
  assert.deepEqual(order, ["first", "second:true"], "the cheaper job queued behind the first");
  assert.ok(turns >= 15, `loop turns during the hashes: ${turns}`);
  assert.equal(bcryptStatus().onLoop, true);
});

test("with workers, jobs run side by side off the event loop, one per worker, the rest queued", async (t) => {
  await configureBcrypt({ workers: 2 });
  t.after(() => configureBcrypt({}));
  assert.equal(await verifyBcrypt(Buffer.from("U*U"), "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"), true);
  const jobs = [bcryptHash(Buffer.from("a"), 8), bcryptHash(Buffer.from("b"), 8), bcryptHash(Buffer.from("c"), 8)];
  assert.deepEqual({ running: bcryptStatus().running, queued: bcryptStatus().queued }, { running: 2, queued: 1 });
  const { value, turns } = await loopTurnsDuring(Promise.all(jobs));
  assert.ok(turns > 15, `the loop kept turning: ${turns}`);
  for (const [i, h] of value.entries()) assert.equal(await verifyPassword(["a", "b", "c"][i]!, h), true);
  const status = bcryptStatus();
  assert.equal(status.onLoop, false);
  assert.ok(status.workers >= 1 && status.workers <= 2, `workers started: ${status.workers}`);
});

test("idle workers hold no process open: a program that hashed exits by itself", () => {
  const program = `import("${new URL("./bcrypt.ts", import.meta.url).href}").then(async (m) => { await Promise.all([m.bcryptHash(Buffer.from("a"), 4), m.bcryptHash(Buffer.from("b"), 4)]); console.log(JSON.stringify(m.bcryptStatus())); });`;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", program], { encoding: "utf8", timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  const status = JSON.parse(r.stdout) as { workers: number; onLoop: boolean };
  assert.equal(status.onLoop, false);
  assert.ok(status.workers >= 1);
});

test("closing the pool fails a job in flight over to the caller instead of leaving it pending", async () => {
  const pool = new BcryptPool(1);
  const failed = assert.rejects(pool.hashPart(Buffer.from("x"), 12, Buffer.alloc(16)), BcryptWorkerUnavailableError);
  await pool.close();
  await failed;
  await assert.rejects(pool.hashPart(Buffer.from("x"), 4, Buffer.alloc(16)), BcryptWorkerUnavailableError);
});

test("a worker idle past idleMs stops (memory back); the next job starts another", async () => {
  const pool = new BcryptPool(2, undefined, 30);
  const salt = Buffer.alloc(16, 1);
  const first = await pool.hashPart(Buffer.from("x"), 4, salt);
  assert.equal(pool.started, 1);
  const deadline = Date.now() + 10_000;
  while (pool.started > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.equal(pool.started, 0, "the idle worker stopped");
  assert.equal(pool.broken, false, "stopping idle is no failure");
  assert.equal(await pool.hashPart(Buffer.from("x"), 4, salt), first);
  assert.equal(pool.started, 1);
  await pool.close();
});

test("a worker that cannot start or dies: the job is computed on the event loop, and later ones too", async (t) => {
  const failing = new BcryptPool(1, () => {
    throw new Error("no threads here");
  });
  await assert.rejects(failing.hashPart(Buffer.from("x"), 4, Buffer.alloc(16)), BcryptWorkerUnavailableError);
  assert.equal(failing.broken, true);
  const dying = new BcryptPool(1, () => new Worker("process.exit(3)", { eval: true }));
  await assert.rejects(dying.hashPart(Buffer.from("x"), 4, Buffer.alloc(16)), BcryptWorkerUnavailableError);
  assert.equal(dying.broken, true);
  await configureBcrypt({ workers: 2, start: () => new Worker("process.exit(3)", { eval: true }) });
  t.after(() => configureBcrypt({}));
  const h = await bcryptHash(Buffer.from("pw"), 5);
  assert.equal(await verifyPassword("pw", h), true);
  assert.equal(bcryptStatus().onLoop, true);
});

/** The first `n` 32-bit words of pi's fractional part (Machin's formula, in fixed point). */
function piFraction(n: number): Int32Array {
  const bits = BigInt(n * 32 + 64);
  const one = 1n << bits;
  const arctanInv = (x: bigint): bigint => {
    const x2 = x * x;
    let term = one / x;
    let sum = term;
    for (let k = 1n; term !== 0n; k++) {
      term /= x2;
      sum += (k % 2n === 1n ? -term : term) / (2n * k + 1n);
    }
    return sum;
  };
  const pi = 16n * arctanInv(5n) - 4n * arctanInv(239n);
  const frac = (pi % one) >> 64n;
  const out = new Int32Array(n);
  for (let i = 0; i < n; i++) out[i] = Number((frac >> BigInt((n - 1 - i) * 32)) & 0xffffffffn) | 0;
  return out;
}

test("Blowfish's initial state is pi: the table is its first 18 + 1024 fractional words", () => {
  const words = bcryptCore().piWords();
  assert.equal(words.length, 18 + 1024);
  assert.deepEqual(words, piFraction(18 + 1024));
  // Go's blowfish/const.go: P's first word, and the last S-box's last.
  assert.equal(words[0]! >>> 0, 0x243f6a88);
  assert.equal(words[18 + 1023]! >>> 0, 0x3ac372e6);
});

/** A prefix to BCRYPT_WORKER_SOURCE: counts the worker's BigInt() calls (pi's computation made ~1000) and adds the count to each reply. */
const COUNT_WORKER_BIGINTS = `
const __bigInt = BigInt;
let __bigInts = 0;
globalThis.BigInt = function (v) { __bigInts++; return __bigInt(v); };
const __port = require("node:worker_threads").parentPort;
const __post = __port.postMessage.bind(__port);
__port.postMessage = (m) => __post({ ...m, bigInts: __bigInts });
`;

test("no worker computes pi: the first worker and one started after an idle stop compute nothing but the hash", async () => {
  const counts: number[] = [];
  const pool = new BcryptPool(1, () => {
    const w = new Worker(COUNT_WORKER_BIGINTS + BCRYPT_WORKER_SOURCE, { eval: true, execArgv: [] });
    w.on("message", (m: { bigInts: number }) => counts.push(m.bigInts));
    return w;
  }, 20);
  const salt = Buffer.alloc(16, 7);
  const want = bcryptCore().hashPartSync(Buffer.from("x"), 4, salt);
  assert.equal(await pool.hashPart(Buffer.from("x"), 4, salt), want);
  const deadline = Date.now() + 10_000;
  while (pool.started > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.equal(pool.started, 0, "the idle worker stopped");
  assert.equal(await pool.hashPart(Buffer.from("x"), 4, salt), want, "a later worker hashes alike");
  await pool.close();
  assert.deepEqual(counts, [0, 0]);
});

test("the main thread does not compute pi: a fresh process's first hash (on a worker) and a hash on the loop", () => {
  // A fresh process: the words are per process, and this one's are decoded already.
  const program = `
    const bigInt = BigInt;
    let calls = 0;
    globalThis.BigInt = function (v) { calls++; return bigInt(v); };
    const m = await import("${new URL("./bcrypt.ts", import.meta.url).href}");
    calls = 0;
    const onWorker = await m.verifyBcrypt(Buffer.from("U*U"), "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW");
    const workerCalls = calls;
    const status = m.bcryptStatus();
    await m.configureBcrypt({ workers: 0 });
    const onLoop = await m.verifyBcrypt(Buffer.from("U*U"), "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW");
    console.log(JSON.stringify({ onWorker, workerCalls, workers: status.workers, onLoop, loopCalls: calls - workerCalls }));`;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", program], { encoding: "utf8", timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { onWorker: true, workerCalls: 0, workers: 1, onLoop: true, loopCalls: 0 });
});

test("falling over to the event loop is logged once, with the reason; closing or idling is not", async (t) => {
  const warnings: Array<{ msg: string; fields: Record<string, unknown> }> = [];
  // Two members in one process: the first stops after the second set its hook, which stays.
  const releaseFirst = setBcryptWarn(() => assert.fail("the stopped member's hook"));
  const release = setBcryptWarn((msg, fields) => warnings.push({ msg, fields }));
  releaseFirst();
  t.after(() => setBcryptWarn(undefined));
  await configureBcrypt({ workers: 2, start: () => new Worker("process.exit(3)", { eval: true }) });
  t.after(() => configureBcrypt({}));
  const hashes = await Promise.all([bcryptHash(Buffer.from("a"), 4), bcryptHash(Buffer.from("b"), 4)]);
  assert.equal(await verifyPassword("a", hashes[0]!), true);
  assert.equal(await verifyPassword("b", await bcryptHash(Buffer.from("b"), 4)), true);
  assert.equal(warnings.length, 1, JSON.stringify(warnings));
  assert.match(warnings[0]!.msg, /event loop/);
  assert.equal(warnings[0]!.fields["reason"], "bcrypt worker exited (3)");
  // Released (its member stopped): a pool failing afterwards reaches no logger of it.
  release();
  await configureBcrypt({ workers: 1, start: () => new Worker("process.exit(4)", { eval: true }) });
  await bcryptHash(Buffer.from("c"), 4);
  assert.equal(warnings.length, 1, JSON.stringify(warnings));
  const notStarting = new Array<string>();
  const failing = new BcryptPool(1, () => {
    throw new Error("no threads here");
  }, undefined, (why) => notStarting.push(why));
  await assert.rejects(failing.hashPart(Buffer.from("x"), 4, Buffer.alloc(16)), BcryptWorkerUnavailableError);
  await assert.rejects(failing.hashPart(Buffer.from("x"), 4, Buffer.alloc(16)), BcryptWorkerUnavailableError);
  assert.deepEqual(notStarting, ["bcrypt worker did not start: no threads here"]);
  // A pool closed, or whose idle worker stopped, is no failure: nothing to report.
  const quiet: string[] = [];
  const pool = new BcryptPool(1, undefined, 20, (why) => quiet.push(why));
  await pool.hashPart(Buffer.from("x"), 4, Buffer.alloc(16));
  const deadline = Date.now() + 10_000;
  while (pool.started > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.equal(pool.started, 0, "the idle worker stopped");
  await pool.hashPart(Buffer.from("x"), 4, Buffer.alloc(16));
  await pool.close();
  assert.deepEqual(quiet, []);
});

test("v2 hashing stays scrypt; both forms verify side by side", async () => {
  const v2 = await hashPassword("pw", { cost: { log2N: 10, r: 8, p: 1 } });
  assert.match(v2, /^\$scrypt\$/);
  assert.equal(await verifyPassword("pw", v2), true);
  assert.equal(await verifyPassword("pw", await hashV3Password("pw", 4)), true);
});

function decodeSalt(s: string): Uint8Array {
  const alphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  return Buffer.from([...s].map((c) => std[alphabet.indexOf(c)]).join(""), "base64").subarray(0, 16);
}
