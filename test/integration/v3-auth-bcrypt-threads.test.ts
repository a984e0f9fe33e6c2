// v3 password checks on bcrypt's worker threads, through a real `kvctl serve` (the bundle's
// serve.cjs starting them from source text): Authenticate calls of different users run side by side, as etcd's
// goroutines do, a flood past the queue is refused with etcd's "too many requests", and
// calls whose deadline passed while queued cost no hash. Wrong passwords are used where a
// hash must run every time, each call its own (successes are cached per credentials, and
// concurrent checks of the same credentials share one hash: auth/v3-authenticate.ts).
import assert from "node:assert/strict";
import { availableParallelism, loadavg } from "node:os";
import { after, before, describe, test } from "node:test";
import { grpcUnary, startGrpcServer, type GrpcTestServer } from "../helpers/grpc.ts";
import { until } from "../../src/until.test-helper.ts";

const AUTHENTICATE = "/etcdserverpb.Auth/Authenticate";

/** AuthenticateRequest{name = 1, password = 2} by hand. */
function authenticateRequest(name: string, password: string): number[] {
  const field = (tag: number, s: string): number[] => {
    const b = [...Buffer.from(s, "utf8")];
    return [tag, b.length, ...b];
  };
  return [...field(0x0a, name), ...field(0x12, password)];
}

function login(s: GrpcTestServer, name: string, password: string, headers = {}): Promise<{ status: string; message: string; ms: number }> {
  return grpcUnary(s.endpoint, AUTHENTICATE, authenticateRequest(name, password), headers);
}

async function gw(s: GrpcTestServer, path: string, body: unknown): Promise<void> {
  const res = await fetch(`${s.url}/v3/${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  assert.equal(res.status, 200, `${path}: ${await res.text()}`);
}

/** The server's worker threads: one per core of this machine (auth/bcrypt-pool.ts). */
const threads = availableParallelism();
/** Jobs waiting, at most (auth/bcrypt.ts BCRYPT_MAX_QUEUED). */
const MAX_QUEUED = 64;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe("v3 logins on bcrypt's worker threads (bcrypt cost 10)", () => {
  let kv: GrpcTestServer;
  let single = 0;

  before(async () => {
    kv = await startGrpcServer("kvctl");
    await until(() => fetch(`${kv.url}/health`).then((r) => r.ok, () => false), "kvctl healthy", 20_000, { intervalMs: 50, detail: () => kv.logs() });
    await gw(kv, "auth/user/add", { name: "root", password: "rootpw" });
    await gw(kv, "auth/user/grant", { user: "root", role: "root" });
    for (const u of ["u1", "u2"]) await gw(kv, "auth/user/add", { name: u, password: `${u}pw` });
    await gw(kv, "auth/enable", {});
  });
  after(() => kv?.stop());

  test("logins of different users check in parallel: two take about one hash's time, not two", async (t) => {
    const ok = await Promise.all([login(kv, "u1", "u1pw"), login(kv, "u2", "u2pw")]);
    assert.deepEqual(ok.map((r) => r.status), ["0", "0"], JSON.stringify(ok));
    const singles: number[] = [];
    const pairs: number[] = [];
    const gaps: number[] = [];
    for (let round = 0; round < 7; round++) {
      const one = await login(kv, "u1", `wrong${round}`);
      assert.equal(one.status, "3", one.message);
      singles.push(one.ms);
      const t0 = performance.now();
      const two = await Promise.all([login(kv, "u1", `wrong${round}a`), login(kv, "u2", `wrong${round}b`)]);
      pairs.push(performance.now() - t0);
      gaps.push(Math.abs(two[0]!.ms - two[1]!.ms));
      assert.deepEqual(two.map((r) => r.status), ["3", "3"]);
    }
    single = median(singles);
    const pair = median(pairs);
    const gap = median(gaps);
    t.diagnostic(`one wrong login ${single.toFixed(0)} ms, two at once ${pair.toFixed(0)} ms, between their answers ${gap.toFixed(0)} ms (medians of 7; singles ${singles.map((x) => x.toFixed(0)).join(" ")}, pairs ${pairs.map((x) => x.toFixed(0)).join(" ")})`);
    // Taking turns, the second answer comes one hash after the first whatever the load;
    // side by side, both come together (a busy machine slows both alike).
    // With more runnable threads than cores the scheduler, not kvctl, decides who finishes first.
    if (threads < 2 || loadavg()[0]! > threads) {
      t.diagnostic(`timing not judged: ${threads} cores, load ${loadavg()[0]!.toFixed(1)}`);
      return;
    }
    assert.ok(gap < 0.5 * single, `the two answers came ${gap.toFixed(0)} ms apart, one login alone took ${single.toFixed(0)} ms: they took turns`);
  });

  test("calls whose deadline passes while queued are dropped: a login right after waits for no leftover hashes", async (t) => {
    const calls = Array.from({ length: 20 * threads }, (_, i) => login(kv, "u1", `late${i}`, { "grpc-timeout": "200m" }));
    const answers = await Promise.all(calls);
    const late = answers.filter((r) => r.status !== "3");
    assert.ok(late.length >= 5 * threads, `most could not be checked within 200 ms: ${JSON.stringify(answers.map((r) => r.status))}`);
    for (const r of late) assert.ok(r.status === "4" || (r.status === "2" && r.message === "context deadline exceeded"), JSON.stringify(r));
    const next = await login(kv, "u2", "after");
    assert.equal(next.status, "3");
    t.diagnostic(`${answers.length} calls with a 200 ms deadline: ${answers.length - late.length} checked, ${late.length} dropped; the next login took ${next.ms.toFixed(0)} ms (one alone: ${single.toFixed(0)} ms)`);
    // Had the dropped ones run, this login would wait behind ~18 hashes per thread.
    assert.ok(next.ms < Math.max(8 * single, 600), `the next login waited ${next.ms.toFixed(0)} ms`);
  });

  test("the gateway's Grpc-Timeout drops queued checks too", async (t) => {
    const gatewayLogin = async (password: string): Promise<{ status: number; ms: number }> => {
      const t0 = performance.now();
      const res = await fetch(`${kv.url}/v3/auth/authenticate`, { method: "POST", body: JSON.stringify({ name: "u2", password }), headers: { "content-type": "application/json", "grpc-timeout": "200m" } });
      await res.arrayBuffer();
      return { status: res.status, ms: performance.now() - t0 };
    };
    const answers = await Promise.all(Array.from({ length: 15 * threads }, (_, i) => gatewayLogin(`gw-late${i}`)));
    const late = answers.filter((r) => r.status !== 400);
    assert.ok(late.length >= 5 * threads, JSON.stringify(answers));
    const next = await login(kv, "u1", "after-gateway");
    assert.equal(next.status, "3");
    t.diagnostic(`${answers.length} gateway calls with a 200 ms deadline: ${answers.length - late.length} checked, ${late.length} answered ${[...new Set(late.map((r) => r.status))].join("/")}; the next login took ${next.ms.toFixed(0)} ms`);
    assert.ok(next.ms < Math.max(8 * single, 600), `the next login waited ${next.ms.toFixed(0)} ms`);
  });

  test("a gateway client that hangs up: its queued check is dropped", async (t) => {
    const hangUp = (password: string): Promise<unknown> =>
      fetch(`${kv.url}/v3/auth/authenticate`, { method: "POST", body: JSON.stringify({ name: "u2", password }), signal: AbortSignal.timeout(150) }).then(
        (res) => res.arrayBuffer(),
        (err: unknown) => err,
      );
    await Promise.all(Array.from({ length: 15 * threads }, (_, i) => hangUp(`gone${i}`)));
    const next = await login(kv, "u1", "after-hang-up");
    assert.equal(next.status, "3");
    t.diagnostic(`${15 * threads} gateway calls abandoned after 150 ms; the next login took ${next.ms.toFixed(0)} ms`);
    assert.ok(next.ms < Math.max(8 * single, 600), `the next login waited ${next.ms.toFixed(0)} ms`);
  });

  test("a UserAdd whose deadline passes while its hash waits is dropped too: no user, no hash", async () => {
    const res = await fetch(`${kv.url}/v3/auth/authenticate`, { method: "POST", body: JSON.stringify({ name: "root", password: "rootpw" }) });
    const token = ((await res.json()) as { token: string }).token;
    const busy = Array.from({ length: 10 * threads }, (_, i) => login(kv, "u1", `busy${i}`));
    const add = await grpcUnary(kv.endpoint, "/etcdserverpb.Auth/UserAdd", authenticateRequest("late-user", "pw"), { token, "grpc-timeout": "100m" });
    assert.ok(add.status === "4" || (add.status === "2" && add.message === "context deadline exceeded"), JSON.stringify(add));
    await Promise.all(busy);
    const got = await fetch(`${kv.url}/v3/auth/user/get`, { method: "POST", body: JSON.stringify({ name: "late-user" }), headers: { authorization: token } });
    assert.match(await got.text(), /user name not found/);
  });

  test("a flood past the queue is refused at once with etcd's 'too many requests' (ResourceExhausted)", async (t) => {
    const flood = MAX_QUEUED + 20 * threads;
    const answers = await Promise.all(Array.from({ length: flood }, (_, i) => login(kv, "u1", `flood${i}`)));
    const refused = answers.filter((r) => r.status === "8");
    const checked = answers.filter((r) => r.status === "3");
    t.diagnostic(`${flood} wrong logins at once: ${checked.length} checked, ${refused.length} refused`);
    assert.equal(refused.length + checked.length, flood, JSON.stringify(answers.filter((r) => r.status !== "8" && r.status !== "3")));
    assert.ok(refused.length >= 1, "nothing was refused");
    assert.ok(checked.length >= MAX_QUEUED + threads, `the queue (${MAX_QUEUED}) and the threads took fewer: ${checked.length}`);
    for (const r of refused) assert.equal(decodeURIComponent(r.message), "etcdserver: too many requests");
    // The refused calls answered without waiting for the queue.
    assert.ok(median(refused.map((r) => r.ms)) < median(checked.map((r) => r.ms)));
  });
});
