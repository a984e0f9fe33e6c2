// v2 access control end to end against a real member (spec 3.2, 4.4-4.6, 5): set up root,
// enable, restrict guest, reader and writer roles, password changes, restart and snapshot
// recovery, disable. The steps share one server and run in order.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { startServer, type TestServer } from "../helpers/server.ts";
import { agent } from "../helpers/http.ts";
import { call, type AuthResponse } from "../helpers/auth-http.ts";

after(() => agent.destroy());

const ROOT = ["root", "rootpw"] as const;
const READER = ["rd", "rdpw"] as const;
const WRITER = ["wr", "wrpw"] as const;

function assertDenied(r: AuthResponse, what: string): void {
  assert.equal(r.status, 401, `${what}: ${r.status} ${r.text}`);
  assert.deepEqual(r.json, { errorCode: 110, message: "The request requires user authentication", cause: "Insufficient credentials", index: 0 }, what);
  assert.equal(r.headers["x-kv-index"] ?? r.headers["x-etcd-index"], "0"); // etcd names it X-Etcd-Index
}

function assertStatus(r: AuthResponse, status: number, what: string): void {
  assert.equal(r.status, status, `${what}: ${r.status} ${r.text}`);
}

// A small snapshot count so the restart below recovers auth from a snapshot, not only the WAL.
let srv: TestServer;
before(async () => {
  srv = await startServer({ flags: ["--snapshot-count", "10"] });
});
after(() => srv.stop());

test("a fresh member starts with auth disabled", async () => {
  const r = await call(srv.url, "GET", "/v2/auth/enable");
  assertStatus(r, 200, "GET enable");
  assert.deepEqual(r.json, { enabled: false });
});

test("enable refuses without a root user, then succeeds once root exists", async () => {
  const no = await call(srv.url, "PUT", "/v2/auth/enable");
  assertStatus(no, 409, "enable without root");
  assert.deepEqual(no.json, { message: "auth: No root user available, please create one" });
  const root = await call(srv.url, "PUT", "/v2/auth/users/root", { body: { user: "root", password: ROOT[1] } });
  assertStatus(root, 201, "create root");
  assert.deepEqual(root.json, { user: "root", roles: ["root"] });
  assert.equal(root.text.includes(ROOT[1]), false, "the password is never returned");
  assertStatus(await call(srv.url, "PUT", "/v2/auth/enable"), 200, "enable");
  assert.deepEqual((await call(srv.url, "GET", "/v2/auth/enable")).json, { enabled: true });
});

test("once enabled, admin endpoints need root and guest keeps full key access by default", async () => {
  assertStatus(await call(srv.url, "GET", "/v2/auth/users"), 401, "list users as guest");
  assertStatus(await call(srv.url, "PUT", "/v2/auth/enable", { auth: ROOT }), 409, "enable twice as root");
  assertStatus(await call(srv.url, "PUT", "/v2/auth/enable"), 401, "enable twice as guest");
  assertStatus(await call(srv.url, "PUT", "/v2/keys/pub/a", { form: { value: "1" } }), 201, "guest write");
  const roles = await call(srv.url, "GET", "/v2/auth/roles", { auth: ROOT });
  assert.deepEqual(roles.json, {
    roles: [
      { role: "guest", permissions: { kv: { read: ["/*"], write: ["/*"] } } },
      { role: "root", permissions: { kv: { read: ["/*"], write: ["/*"] } } },
    ],
  });
});

test("restricting guest to read-only denies unauthenticated writes with error 110", async () => {
  const r = await call(srv.url, "PUT", "/v2/auth/roles/guest", { auth: ROOT, body: { role: "guest", revoke: { kv: { write: ["/*"] } } } });
  assertStatus(r, 200, "revoke guest write");
  assert.deepEqual(r.json, { role: "guest", permissions: { kv: { read: ["/*"], write: [] } } });
  assertDenied(await call(srv.url, "PUT", "/v2/keys/pub/a", { form: { value: "2" } }), "guest write after revoke");
  assertDenied(await call(srv.url, "DELETE", "/v2/keys/pub/a"), "guest delete after revoke");
  assertStatus(await call(srv.url, "GET", "/v2/keys/pub/a"), 200, "guest read");
  assertStatus(await call(srv.url, "PUT", "/v2/keys/pub/a", { form: { value: "2" }, auth: ROOT }), 200, "root write");
});

test("reader and writer roles combine patterns per user", async () => {
  const mk = (role: string, permissions: unknown): Promise<AuthResponse> => call(srv.url, "PUT", `/v2/auth/roles/${role}`, { auth: ROOT, body: { role, permissions } });
  assertStatus(await mk("reader", { kv: { read: ["/data/*"], write: [] } }), 201, "create reader");
  assertStatus(await mk("writer", { kv: { read: [], write: ["/data/*"] } }), 201, "create writer");
  assertStatus(await call(srv.url, "PUT", "/v2/auth/users/rd", { auth: ROOT, body: { user: "rd", password: READER[1], roles: ["reader"] } }), 200, "create rd");
  const wr = await call(srv.url, "PUT", "/v2/auth/users/wr", { auth: ROOT, body: { user: "wr", password: WRITER[1] } });
  assertStatus(wr, 201, "create wr");
  const grant = await call(srv.url, "PUT", "/v2/auth/users/wr", { auth: ROOT, body: { user: "wr", grant: ["writer", "reader"] } });
  assert.deepEqual(grant.json, { user: "wr", roles: ["reader", "writer"] });

  assertStatus(await call(srv.url, "PUT", "/v2/keys/data/k", { form: { value: "v" }, auth: WRITER }), 201, "writer writes");
  assertDenied(await call(srv.url, "PUT", "/v2/keys/data/k", { form: { value: "v" }, auth: READER }), "reader writes");
  assertDenied(await call(srv.url, "PUT", "/v2/keys/other", { form: { value: "v" }, auth: WRITER }), "writer outside its pattern");
  const read = await call(srv.url, "GET", "/v2/keys/data/k", { auth: READER });
  assertStatus(read, 200, "reader reads");
  // /data/* covers /data/ and below but not /data itself; recursive needs a * pattern
  assertDenied(await call(srv.url, "GET", "/v2/keys/data?recursive=true", { auth: READER }), "recursive read of /data");
  assertStatus(await call(srv.url, "GET", "/v2/keys/data/?recursive=true", { auth: READER }), 200, "recursive read of /data/");
  // reads are allowed to the guest (read /*), but bad credentials never fall back to guest
  assertDenied(await call(srv.url, "GET", "/v2/keys/data/k", { auth: ["rd", "wrong"] }), "wrong password");
  assertDenied(await call(srv.url, "GET", "/v2/keys/data/k", { auth: ["nobody", "x"] }), "unknown user");
  assertDenied(await call(srv.url, "GET", "/v2/keys/data/k", { authorization: "Bearer abc" }), "other scheme");
  const admin = await call(srv.url, "GET", "/v2/auth/users", { auth: READER });
  assertStatus(admin, 401, "non-root admin");
  assert.deepEqual(admin.json, { message: "Insufficient credentials" });
});

test("a password change takes effect at once: the old password is refused, the new one works", async () => {
  assertStatus(await call(srv.url, "GET", "/v2/keys/data/k", { auth: WRITER }), 200, "old password before the change");
  const r = await call(srv.url, "PUT", "/v2/auth/users/wr", { auth: ROOT, body: { user: "wr", password: "newpw" } });
  assertStatus(r, 200, "change password");
  assert.deepEqual(r.json, { user: "wr", roles: ["reader", "writer"] });
  assertDenied(await call(srv.url, "GET", "/v2/keys/data/k", { auth: WRITER }), "old password after the change");
  assertStatus(await call(srv.url, "GET", "/v2/keys/data/k", { auth: ["wr", "newpw"] }), 200, "new password");
});

test("revoking a role from a user removes the access it gave", async () => {
  assertStatus(await call(srv.url, "PUT", "/v2/auth/users/wr", { auth: ROOT, body: { user: "wr", revoke: ["writer"] } }), 200, "revoke writer");
  assertDenied(await call(srv.url, "PUT", "/v2/keys/data/k", { form: { value: "w" }, auth: ["wr", "newpw"] }), "write after revoke");
});

test("users, roles and the enabled flag survive a restart through snapshot and WAL", async () => {
  // enough writes to cross --snapshot-count several times
  for (let i = 0; i < 25; i++) assertStatus(await call(srv.url, "PUT", `/v2/keys/fill/${i}`, { form: { value: "x" }, auth: ROOT }), 201, "fill");
  const before = await call(srv.url, "GET", "/v2/auth/users", { auth: ROOT });
  const rolesBefore = await call(srv.url, "GET", "/v2/auth/roles", { auth: ROOT });
  const snaps = readdirSync(join(srv.dataDir, "member", "snap")).filter((f) => f.endsWith(".snap"));
  assert.ok(snaps.length > 0, "a snapshot was taken, so recovery reads auth from it");
  await srv.restart();
  assert.deepEqual((await call(srv.url, "GET", "/v2/auth/enable")).json, { enabled: true });
  assert.deepEqual((await call(srv.url, "GET", "/v2/auth/users", { auth: ROOT })).json, before.json);
  assert.deepEqual((await call(srv.url, "GET", "/v2/auth/roles", { auth: ROOT })).json, rolesBefore.json);
  assertStatus(await call(srv.url, "GET", "/v2/keys/data/k", { auth: ["wr", "newpw"] }), 200, "new password after restart");
  assertDenied(await call(srv.url, "GET", "/v2/keys/data/k", { auth: WRITER }), "old password after restart");
  assertDenied(await call(srv.url, "PUT", "/v2/keys/pub/b", { form: { value: "x" } }), "guest write after restart");
});

test("root cannot be deleted while enabled; disabling as root opens the key space again", async () => {
  const del = await call(srv.url, "DELETE", "/v2/auth/users/root", { auth: ROOT });
  assertStatus(del, 403, "delete root");
  assert.deepEqual(del.json, { message: "auth: Cannot delete root user while auth is enabled." });
  assertStatus(await call(srv.url, "DELETE", "/v2/auth/enable", { auth: READER }), 401, "disable as non-root");
  assertStatus(await call(srv.url, "DELETE", "/v2/auth/enable", { auth: ROOT }), 200, "disable as root");
  assertStatus(await call(srv.url, "DELETE", "/v2/auth/enable"), 409, "disable twice");
  // credentials are not even checked while disabled
  assertStatus(await call(srv.url, "PUT", "/v2/keys/pub/c", { form: { value: "x" }, auth: ["nobody", "bad"] }), 201, "write with bad credentials");
  assertStatus(await call(srv.url, "GET", "/v2/auth/users", { auth: ["nobody", "bad"] }), 200, "admin with bad credentials");
  assertStatus(await call(srv.url, "DELETE", "/v2/auth/users/root"), 200, "delete root while disabled");
});
