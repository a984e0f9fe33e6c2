// Unit tests of lib/auth.ts against a tiny in-process HTTP stub that records every request
// and answers like etcd 3.4 (statuses from the conformance recording) unless told otherwise.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { after, before, test } from "node:test";
import { AUTH_CHECK_KEY, AUTH_GET_KEY, authCheckText, authSetupSteps, BENCH_AUTH, prepareAuth, setupAuth, wrkCredentials } from "./auth.ts";
import { basicAuth, VALUE64 } from "./http.ts";

// port 24680: the end of the bench's range, away from the driver's 24600-24611 and server.test's 24690+
const PORT = 24680;
const URL_ = `http://127.0.0.1:${PORT}`;
const ROOT = basicAuth("root", BENCH_AUTH.rootPassword);
const USER = basicAuth(BENCH_AUTH.user, BENCH_AUTH.password);

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  readonly body: string;
}

/** Answers a request: status for the given request. The default is etcd-like (see etcdLike). */
type Behaviour = (r: Seen) => number;

/** etcd 3.4 on a fresh server for the bench's setup: keys need the user's credentials once guest is revoked. */
function etcdLike(overrides: Readonly<Record<string, number>> = {}): Behaviour {
  let guestRevoked = false;
  return (r) => {
    const key = `${r.method} ${r.url}`;
    const o = overrides[key];
    if (o !== undefined) return o;
    if (key === "PUT /v2/auth/users/root") return 201;
    if (key === `PUT /v2/auth/roles/${BENCH_AUTH.role}`) return 201;
    if (key === `PUT /v2/auth/users/${BENCH_AUTH.user}`) return 200;
    if (key === "PUT /v2/auth/enable") return 200;
    if (key === "PUT /v2/auth/roles/guest") {
      if (r.authorization !== ROOT) return 401;
      guestRevoked = true;
      return 200;
    }
    if (r.url.startsWith("/v2/keys/")) {
      if (guestRevoked && r.authorization !== USER) return 401;
      return r.method === "PUT" ? 201 : 200;
    }
    return 404;
  };
}

let server: Server;
let seen: Seen[] = [];
let behaviour: Behaviour = etcdLike();

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let b = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (b += c));
    req.on("end", () => resolve(b));
    req.on("error", reject);
  });
}

before(async () => {
  server = createServer((req, res) => {
    void readBody(req).then((body) => {
      const r: Seen = { method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization, contentType: req.headers["content-type"], body };
      seen.push(r);
      res.writeHead(behaviour(r), { "Content-Type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(PORT, "127.0.0.1", resolve));
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

function reset(b: Behaviour): void {
  seen = [];
  behaviour = b;
}

test("basicAuth encodes user:password as etcd's recorded Basic header", () => {
  assert.equal(basicAuth("root", "rootpw"), "Basic cm9vdDpyb290cHc=");
  assert.equal(basicAuth("ex", "p"), "Basic ZXg6cA==");
  assert.equal(wrkCredentials(), "bencher:bench-pw");
});

test("setupAuth sends etcd's five setup requests in order, root credentials only on the guest revoke", async () => {
  reset(etcdLike());
  assert.deepEqual(await setupAuth(URL_), []);
  assert.deepEqual(seen.map((r) => `${r.method} ${r.url}`), [
    "PUT /v2/auth/users/root", "PUT /v2/auth/roles/bench", "PUT /v2/auth/users/bencher", "PUT /v2/auth/enable", "PUT /v2/auth/roles/guest",
  ]);
  const bodies = seen.map((r) => (r.body === "" ? null : JSON.parse(r.body)));
  assert.deepEqual(bodies, [
    { user: "root", password: "bench-root-pw" },
    { role: "bench", permissions: { kv: { read: ["/bench*"], write: ["/bench*"] } } },
    { user: "bencher", password: "bench-pw", roles: ["bench"] },
    null,
    { role: "guest", revoke: { kv: { read: ["/*"], write: ["/*"] } } },
  ]);
  assert.deepEqual(seen.map((r) => r.contentType), ["application/json", "application/json", "application/json", undefined, "application/json"]);
  assert.deepEqual(seen.map((r) => r.authorization), [undefined, undefined, undefined, undefined, ROOT]);
});

test("authSetupSteps carries etcd 3.4's recorded statuses (201 creates, 200 create-with-roles, enable, revoke)", () => {
  assert.deepEqual(authSetupSteps().map((s) => s.etcdStatus), [201, 201, 200, 200, 200]);
});

test("prepareAuth writes the GET key as the user and sees 401 without credentials", async () => {
  reset(etcdLike());
  const check = await prepareAuth(URL_);
  assert.deepEqual(check, { get_without_credentials: 401, put_without_credentials: 401, get_as_user: 200, ok: true, notes: [] });
  const after = seen.slice(5);
  assert.deepEqual(after.map((r) => [r.method, r.url, r.authorization ?? null]), [
    ["PUT", `/v2/keys/${AUTH_GET_KEY}`, USER],
    ["GET", `/v2/keys/${AUTH_GET_KEY}`, null],
    ["PUT", `/v2/keys/${AUTH_CHECK_KEY}`, null],
    ["GET", `/v2/keys/${AUTH_GET_KEY}`, USER],
  ]);
  assert.equal(after[0]?.body, `value=${VALUE64}`);
  assert.equal(after[0]?.contentType, "application/x-www-form-urlencoded");
  assert.match(authCheckText(check), /^without credentials GET 401, PUT 401; as bencher GET 200: ok$/);
});

test("setupAuth keeps a note when a step answers 2xx but not etcd's status", async () => {
  reset(etcdLike({ "PUT /v2/auth/users/bencher": 201 }));
  assert.deepEqual(await setupAuth(URL_), ["201 to create user bencher, etcd 200"]);
});

const failures: { name: string; overrides: Record<string, number>; want: RegExp }[] = [
  { name: "enable answers 409", overrides: { "PUT /v2/auth/enable": 409 }, want: /enable auth \(PUT \/v2\/auth\/enable\) answered 409/ },
  { name: "the role create answers 400", overrides: { "PUT /v2/auth/roles/bench": 400 }, want: /create role bench .* answered 400/ },
  { name: "the guest revoke answers 401", overrides: { "PUT /v2/auth/roles/guest": 401 }, want: /revoke guest read\/write .* answered 401/ },
];
for (const f of failures) {
  test(`setupAuth rejects naming the step when ${f.name}`, async () => {
    reset(etcdLike(f.overrides));
    await assert.rejects(setupAuth(URL_), f.want);
  });
}

test("prepareAuth rejects when requests without credentials still pass (guest not revoked)", async () => {
  reset((r) => (r.url.startsWith("/v2/keys/") ? 200 : r.url === "/v2/auth/users/root" ? 201 : r.url === "/v2/auth/roles/bench" ? 201 : 200));
  await assert.rejects(prepareAuth(URL_), /auth setup check failed: without credentials GET 200, PUT 200; as bencher GET 200: WRONG/);
});

test("prepareAuth rejects when the user's own credentials are refused", async () => {
  reset(etcdLike({ [`GET /v2/keys/${AUTH_GET_KEY}`]: 401 }));
  await assert.rejects(prepareAuth(URL_), /WRONG/);
});
