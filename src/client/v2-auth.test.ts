import { test } from "node:test";
import assert from "node:assert/strict";
import { ClusterClient } from "./cluster.ts";
import { NetworkError } from "./errors.ts";
import type { HttpRequest, HttpResponse, Transport } from "./transport.ts";
import {
  AuthApiError,
  addRole,
  addUser,
  changePassword,
  decodeRole,
  decodeUser,
  getAuthEnabled,
  getRole,
  getUser,
  goJsonErrorMessage,
  goJsonString,
  goUserRoles,
  grantRoleKV,
  grantUser,
  listRoles,
  listUsers,
  removeRole,
  removeUser,
  revokeRoleKV,
  revokeUser,
  roleBody,
  sameRole,
  setAuthEnabled,
  userBody,
} from "./v2-auth.ts";

/** Answers every request with the next scripted response and records what was sent. */
function scripted(...answers: HttpResponse[]): { client: ClusterClient; sent: HttpRequest[] } {
  const sent: HttpRequest[] = [];
  const transport: Transport = {
    async request(req) {
      sent.push(req);
      const next = answers.shift();
      if (next === undefined) throw new Error("no scripted answer left");
      return next;
    },
    close() {},
  };
  return { client: new ClusterClient({ endpoints: ["http://m:1"], transport }), sent };
}

const res = (status: number, body: unknown): HttpResponse => ({
  status,
  statusText: "",
  headers: {},
  body: typeof body === "string" ? body : JSON.stringify(body),
});

const rootUser = { user: "root", roles: [{ role: "root", permissions: { kv: { read: ["/*"], write: ["/*"] } } }] };
const r1 = { role: "r1", permissions: { kv: { read: ["/foo/*"], write: [] } } };

const requestCases: {
  name: string;
  call: (c: ClusterClient) => Promise<unknown>;
  answer: HttpResponse;
  want: { method: string; path: string; body?: string; contentType?: string };
  result?: unknown;
}[] = [
  { name: "setAuthEnabled(true) PUTs /v2/auth/enable", call: (c) => setAuthEnabled(c, true), answer: res(200, ""), want: { method: "PUT", path: "/v2/auth/enable" } },
  { name: "setAuthEnabled(false) DELETEs /v2/auth/enable", call: (c) => setAuthEnabled(c, false), answer: res(200, ""), want: { method: "DELETE", path: "/v2/auth/enable" } },
  { name: "getAuthEnabled reads enabled", call: (c) => getAuthEnabled(c), answer: res(200, { enabled: true }), want: { method: "GET", path: "/v2/auth/enable" }, result: true },
  { name: "listUsers returns the names", call: (c) => listUsers(c), answer: res(200, { users: [rootUser, { user: "bob" }] }), want: { method: "GET", path: "/v2/auth/users", contentType: "application/json" }, result: ["root", "bob"] },
  { name: "listUsers returns [] for users null", call: (c) => listUsers(c), answer: res(200, { users: null }), want: { method: "GET", path: "/v2/auth/users", contentType: "application/json" }, result: [] },
  {
    name: "addUser PUTs the Go-encoded user",
    call: (c) => addUser(c, "bob", "s3<cret"),
    answer: res(201, { user: "bob", roles: null }),
    want: { method: "PUT", path: "/v2/auth/users/bob", body: '{"user":"bob","password":"s3\\u003ccret","roles":null}', contentType: "application/json" },
  },
  { name: "removeUser DELETEs the user", call: (c) => removeUser(c, "bob"), answer: res(200, ""), want: { method: "DELETE", path: "/v2/auth/users/bob" } },
  {
    name: "getUser decodes role objects",
    call: (c) => getUser(c, "root"),
    answer: res(200, rootUser),
    want: { method: "GET", path: "/v2/auth/users/root" },
    result: { user: "root", roles: ["root"], roleObjects: true },
  },
  {
    name: "grantUser sends grant",
    call: (c) => grantUser(c, "bob", ["r1", "r2"]),
    answer: res(200, { user: "bob", roles: ["r1", "r2"] }),
    want: { method: "PUT", path: "/v2/auth/users/bob", body: '{"user":"bob","roles":null,"grant":["r1","r2"]}', contentType: "application/json" },
    result: { user: "bob", roles: ["r1", "r2"], roleObjects: false },
  },
  {
    name: "revokeUser sends revoke",
    call: (c) => revokeUser(c, "bob", ["r1"]),
    answer: res(200, { user: "bob", roles: null }),
    want: { method: "PUT", path: "/v2/auth/users/bob", body: '{"user":"bob","roles":null,"revoke":["r1"]}', contentType: "application/json" },
  },
  {
    name: "changePassword sends the password",
    call: (c) => changePassword(c, "bob", "pw"),
    answer: res(200, { user: "bob", roles: null }),
    want: { method: "PUT", path: "/v2/auth/users/bob", body: '{"user":"bob","password":"pw","roles":null}', contentType: "application/json" },
  },
  { name: "listRoles returns the names", call: (c) => listRoles(c), answer: res(200, { roles: [r1, { role: "root" }] }), want: { method: "GET", path: "/v2/auth/roles", contentType: "application/json" }, result: ["r1", "root"] },
  {
    name: "addRole PUTs the role with nil permissions",
    call: (c) => addRole(c, "r1"),
    answer: res(201, r1),
    want: { method: "PUT", path: "/v2/auth/roles/r1", body: '{"role":"r1","permissions":{"kv":{"read":null,"write":null}}}', contentType: "application/json" },
  },
  { name: "removeRole DELETEs the role", call: (c) => removeRole(c, "r1"), answer: res(200, ""), want: { method: "DELETE", path: "/v2/auth/roles/r1" } },
  { name: "getRole escapes the name like Go", call: (c) => getRole(c, "a b"), answer: res(200, r1), want: { method: "GET", path: "/v2/auth/roles/a%20b" } },
  {
    name: "grantRoleKV sends grant with read-write lists",
    call: (c) => grantRoleKV(c, "r1", { prefixes: ["/p"], perm: "readwrite" }),
    answer: res(200, r1),
    want: {
      method: "PUT",
      path: "/v2/auth/roles/r1",
      body: '{"role":"r1","permissions":{"kv":{"read":null,"write":null}},"grant":{"kv":{"read":["/p"],"write":["/p"]}}}',
      contentType: "application/json",
    },
  },
  {
    name: "revokeRoleKV sends revoke with the write list only",
    call: (c) => revokeRoleKV(c, "r1", { prefixes: ["/p"], perm: "write" }),
    answer: res(200, r1),
    want: {
      method: "PUT",
      path: "/v2/auth/roles/r1",
      body: '{"role":"r1","permissions":{"kv":{"read":null,"write":null}},"revoke":{"kv":{"read":null,"write":["/p"]}}}',
      contentType: "application/json",
    },
  },
];

for (const c of requestCases) {
  test(`v2-auth ${c.name}`, async () => {
    const { client, sent } = scripted(c.answer);
    const result = await c.call(client);
    assert.equal(sent.length, 1);
    const req = sent[0];
    assert.equal(req?.method, c.want.method);
    assert.equal(req?.path, c.want.path);
    assert.equal(req?.body, c.want.body);
    assert.equal(req?.headers?.["content-type"], c.want.contentType);
    if ("result" in c) assert.deepEqual(result, c.result);
  });
}

const errorCases: { name: string; call: (c: ClusterClient) => Promise<unknown>; answer: HttpResponse; message: string }[] = [
  { name: "a 401 gives the server's message", call: (c) => listUsers(c), answer: res(401, { message: "Insufficient credentials" }), message: "Insufficient credentials" },
  { name: "role list ignores the error body", call: (c) => listRoles(c), answer: res(401, { message: "Insufficient credentials" }), message: "unexpected status code 401" },
  { name: "a 201 where only 200 is expected gives an empty message", call: (c) => changePassword(c, "x", "y"), answer: res(201, { user: "x", roles: null }), message: "" },
  { name: "an empty error body is Go's end-of-input error", call: (c) => removeRole(c, "x"), answer: res(404, ""), message: "unexpected end of JSON input" },
  { name: "an HTML error body is Go's invalid-character error", call: (c) => getRole(c, "x"), answer: res(404, "<html>"), message: "invalid character '<' looking for beginning of value" },
  { name: "a 409 on enable gives the message", call: (c) => setAuthEnabled(c, true), answer: res(409, { message: "auth: No root user available, please create one" }), message: "auth: No root user available, please create one" },
];

for (const c of errorCases) {
  test(`v2-auth ${c.name}`, async () => {
    const { client } = scripted(c.answer);
    await assert.rejects(c.call(client), (err: unknown) => err instanceof Error && err.message === c.message);
  });
}

test("v2-auth errors for a status carry it as AuthApiError", async () => {
  const { client } = scripted(res(403, { message: "nope" }));
  await assert.rejects(addUser(client, "a", "b"), (err: unknown) => err instanceof AuthApiError && err.status === 403 && err.code === "AUTH_ERROR");
});

test("userBody omits an empty password like Go's omitempty", () => {
  assert.equal(userBody({ user: "u", password: "" }), '{"user":"u","roles":null}');
});

test("roleBody keeps null and [] apart", () => {
  assert.equal(roleBody({ role: "r", grant: { read: [], write: null } }), '{"role":"r","permissions":{"kv":{"read":null,"write":null}},"grant":{"kv":{"read":[],"write":null}}}');
});

test("goJsonString escapes HTML characters and line separators like Go", () => {
  assert.equal(goJsonString('a<b>&"c"\u2028'), '"a\\u003cb\\u003e\\u0026\\"c\\"\\u2028"');
});

test("goJsonErrorMessage quotes a single quote like Go", () => {
  assert.equal(goJsonErrorMessage("'x'"), "invalid character '\\'' looking for beginning of value");
  assert.equal(goJsonErrorMessage(" \n"), "unexpected end of JSON input");
});

const rolesCases: { name: string; body: unknown; want: string[] }[] = [
  { name: "role objects put one empty string per role first (Go's double decode)", body: { user: "a", roles: [r1, { role: "r2" }] }, want: ["", "", "r1", "r2"] },
  { name: "role names stay as they are", body: { user: "a", roles: ["r1"] }, want: ["r1"] },
  { name: "no roles give none", body: { user: "a", roles: null }, want: [] },
];
for (const c of rolesCases) {
  test(`goUserRoles: ${c.name}`, () => {
    assert.deepEqual(goUserRoles(decodeUser(c.body)), c.want);
  });
}

test("sameRole tells a nil list from an empty one, as reflect.DeepEqual does", () => {
  const a = decodeRole({ role: "r", permissions: { kv: { read: ["/a"], write: null } } });
  const b = decodeRole({ role: "r", permissions: { kv: { read: ["/a"] } } });
  const c = decodeRole({ role: "r", permissions: { kv: { read: ["/a"], write: [] } } });
  assert.equal(sameRole(a, b), true);
  assert.equal(sameRole(a, c), false);
});

test("v2-auth changes are not re-sent to another member after a failure that may have reached the first", async () => {
  const sent: string[] = [];
  const transport: Transport = {
    async request(req) {
      sent.push(req.origin);
      if (req.origin === "http://a:1") {
        throw new NetworkError("read tcp a:1: read: connection reset by peer", { code: "ECONNRESET", sent: true, connection: true });
      }
      return res(200, r1);
    },
    close() {},
  };
  const client = new ClusterClient({ endpoints: ["http://a:1", "http://b:2"], transport });
  await assert.rejects(grantRoleKV(client, "r1", { prefixes: ["/p"], perm: "read" }), /connection reset/);
  assert.deepEqual(sent, ["http://a:1"]);
  sent.length = 0;
  await getRole(client, "r1");
  assert.deepEqual(sent, ["http://b:2"]);
});
