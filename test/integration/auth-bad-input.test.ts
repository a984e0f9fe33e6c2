// Bad input to the v2 auth API and to auth-checked key requests: a few
// hundred malformed bodies, names, paths, methods and Authorization headers, each answered
// with its 4xx, and afterwards users, roles, keys, the enabled flag and the store index are
// exactly what they were.
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { startServer, type TestServer } from "../helpers/server.ts";
import { agent } from "../helpers/http.ts";
import { basic, call, rawRequest, type CallOptions } from "../helpers/auth-http.ts";

after(() => agent.destroy());

const ROOT = ["root", "rootpw"] as const;
const rootAuth = { auth: ROOT };

let srv: TestServer;
before(async () => {
  srv = await startServer();
  const setup: Array<[string, string, CallOptions, number]> = [
    ["PUT", "/v2/auth/users/root", { body: { user: "root", password: ROOT[1] } }, 201],
    ["PUT", "/v2/auth/roles/r", { body: { role: "r", permissions: { kv: { read: ["/a/*"], write: ["/a/*"] } } } }, 201],
    ["PUT", "/v2/auth/users/u", { body: { user: "u", password: "upw", roles: ["r"] } }, 200],
    ["PUT", "/v2/keys/a/k", { form: { value: "v" } }, 201],
    ["PUT", "/v2/auth/enable", {}, 200],
    ["PUT", "/v2/auth/roles/guest", { ...rootAuth, body: { role: "guest", revoke: { kv: { write: ["/*"] } } } }, 200],
  ];
  for (const [method, path, opts, want] of setup) {
    const r = await call(srv.url, method, path, opts);
    assert.equal(r.status, want, `${method} ${path}: ${r.text}`);
  }
});
after(() => srv.stop());

interface Snapshot {
  users: unknown;
  roles: unknown;
  keys: unknown;
  enabled: unknown;
  index: unknown;
}

async function snapshot(): Promise<Snapshot> {
  const keys = await call(srv.url, "GET", "/v2/keys/?recursive=true&sorted=true", rootAuth);
  return {
    users: (await call(srv.url, "GET", "/v2/auth/users", rootAuth)).json,
    roles: (await call(srv.url, "GET", "/v2/auth/roles", rootAuth)).json,
    keys: keys.json,
    enabled: (await call(srv.url, "GET", "/v2/auth/enable")).json,
    index: keys.headers["x-kv-index"],
  };
}

interface BadCase {
  name: string;
  method: string;
  path: string;
  opts: CallOptions;
  status: number;
  /** The `message` (admin endpoints) or errorCode (key endpoints) to expect, when fixed. */
  message?: string;
  errorCode?: number;
  /** A deliberate kvctl difference (etcd accepts any body size): skipped against etcd. */
  kvctlOnly?: boolean;
}

const invalidJson = "Invalid JSON in request body.";
const badJsonBodies: Array<string | Buffer> = [
  "",
  " ",
  "nope",
  "{",
  "}",
  '{"user":"x"',
  "{'user':'x'}",
  '{"user":"x",}',
  '{"user" "x"}',
  "[]",
  '"x"',
  "42",
  "true",
  "nul",
  Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]),
  '{"user":5}',
  '{"user":"x","password":["a"]}',
  '{"user":"x","roles":"r"}',
  '{"user":"x","roles":[1]}',
  '{"user":"x","grant":{"a":1}}',
  '{"user":"x","revoke":7}',
  '{"user":{"nested":true}}',
  '{"user":"x","password":"p\u0001"}',
];
const badRoleJsonBodies: Array<string | Buffer> = [
  ...badJsonBodies.slice(0, 15),
  '{"role":5}',
  '{"role":"x","permissions":[]}',
  '{"role":"x","permissions":{"kv":"all"}}',
  '{"role":"x","permissions":{"kv":{"read":"/a"}}}',
  '{"role":"x","permissions":{"kv":{"read":[true]}}}',
  '{"role":"x","grant":5}',
  '{"role":"x","revoke":"x"}',
];

function cases(): BadCase[] {
  const out: BadCase[] = [];
  for (const body of badJsonBodies) {
    for (const name of ["x", "u", "root"]) {
      out.push({ name: `user ${name} body ${JSON.stringify(String(body))}`, method: "PUT", path: `/v2/auth/users/${name}`, opts: { ...rootAuth, body }, status: 400, message: invalidJson });
    }
  }
  for (const body of badRoleJsonBodies) {
    for (const name of ["x", "r", "guest"]) {
      out.push({ name: `role ${name} body ${JSON.stringify(String(body))}`, method: "PUT", path: `/v2/auth/roles/${name}`, opts: { ...rootAuth, body }, status: 400, message: invalidJson });
    }
  }
  const userMismatch = "User JSON name does not match the name in the URL";
  const roleMismatch = "Role JSON name does not match the name in the URL";
  const semantic: Array<[string, string, unknown, number, string]> = [
    ["/v2/auth/users/x", "users", { user: "y", password: "p" }, 400, userMismatch],
    ["/v2/auth/users/x", "users", { user: "X", password: "p" }, 400, userMismatch],
    ["/v2/auth/users/x", "users", { password: "p" }, 400, userMismatch],
    ["/v2/auth/users/x", "users", null, 400, userMismatch],
    ["/v2/auth/users/x", "users", "nullx", 400, userMismatch],
    ["/v2/auth/users/%FF", "users", { user: "\ufffd", password: "p" }, 400, userMismatch],
    ["/v2/auth/users/x%20", "users", { user: "x", password: "p" }, 400, userMismatch],
    ["/v2/auth/users/x", "users", { user: "x" }, 400, "auth: Cannot create user x with an empty password"],
    ["/v2/auth/users/x", "users", { user: "x", password: "" }, 400, "auth: Cannot create user x with an empty password"],
    ["/v2/auth/users/x", "users", { user: "x", password: "p", roles: ["r"], grant: ["r"] }, 400, "User JSON contains both roles and grant/revoke"],
    ["/v2/auth/users/x", "users", { user: "x", grant: ["r"] }, 404, "auth: User x does not exist."],
    ["/v2/auth/users/u", "users", { user: "u", grant: ["r"] }, 409, "auth: Granting duplicate role r for user u"],
    ["/v2/auth/users/u", "users", { user: "u", revoke: ["nope"] }, 409, "auth: Revoking ungranted role nope for user u"],
    ["/v2/auth/users/u", "users", { user: "u", roles: ["r"], password: "p" }, 409, "auth: User u already exists."],
    ["/v2/auth/users/root", "users", { user: "root" }, 400, "auth: User not updated. Use grant/revoke/password to update the user."],
    ["/v2/auth/roles/x", "roles", { role: "y" }, 400, roleMismatch],
    ["/v2/auth/roles/x", "roles", {}, 400, roleMismatch],
    ["/v2/auth/roles/x", "roles", { role: "x", permissions: { kv: { read: ["/a"] } }, grant: { kv: { read: ["/b"] } } }, 400, "Role JSON contains both permissions and grant/revoke"],
    ["/v2/auth/roles/x", "roles", { role: "x", grant: { kv: { read: ["/b"] } } }, 404, "auth: Role x does not exist."],
    ["/v2/auth/roles/r", "roles", { role: "r" }, 409, "auth: Role r already exists."],
    ["/v2/auth/roles/r", "roles", { role: "r", grant: { kv: { read: ["/a/*"] } } }, 409, "auth: Granting duplicate read permission /a/*"],
    ["/v2/auth/roles/r", "roles", { role: "r", grant: { kv: { write: ["/n", "/n"] } } }, 409, "auth: Granting duplicate write permission /n"],
    ["/v2/auth/roles/r", "roles", { role: "r", revoke: { kv: { read: ["/never"] } } }, 400, "auth: Role not updated. Use grant/revoke to update the role."],
    ["/v2/auth/roles/root", "roles", { role: "root" }, 403, "auth: Cannot modify role root: is root role."],
    ["/v2/auth/roles/root", "roles", { role: "root", grant: { kv: { read: ["/x"] } } }, 403, "auth: Cannot modify role root: is root role."],
  ];
  for (const [path, , body, status, message] of semantic) out.push({ name: `PUT ${path} ${JSON.stringify(body)}`, method: "PUT", path, opts: { ...rootAuth, body }, status, message });
  const deletes: Array<[string, number, string]> = [
    ["/v2/auth/users/nobody", 404, "auth: User nobody does not exist"],
    ["/v2/auth/users/root", 403, "auth: Cannot delete root user while auth is enabled."],
    ["/v2/auth/users/%FF", 404, "auth: User \ufffd does not exist"],
    ["/v2/auth/roles/nobody", 404, "auth: Role nobody doesn't exist."],
    ["/v2/auth/roles/root", 403, "auth: Cannot modify role root: is root role."],
  ];
  for (const [path, status, message] of deletes) out.push({ name: `DELETE ${path}`, method: "DELETE", path, opts: rootAuth, status, message });
  out.push({ name: "oversized user body", method: "PUT", path: "/v2/auth/users/x", opts: { ...rootAuth, body: `{"user":"x","password":"${"p".repeat(2 << 20)}"}` }, status: 413, kvctlOnly: true });
  out.push({ name: "oversized role body", method: "PUT", path: "/v2/auth/roles/x", opts: { ...rootAuth, body: Buffer.alloc(3 << 20, 0x20) }, status: 413, kvctlOnly: true });
  for (const path of ["/v2/auth/users/a/b", "/v2/auth/roles/a/b", "/v2/auth/users/a%2Fb"]) {
    out.push({ name: `GET ${path}`, method: "GET", path, opts: rootAuth, status: 400, message: "Invalid path" });
  }
  for (const [method, path] of [
    ["POST", "/v2/auth/users"],
    ["HEAD", "/v2/auth/users/u"],
    ["PATCH", "/v2/auth/roles/r"],
    ["POST", "/v2/auth/enable"],
    ["PATCH", "/v2/members"],
  ] as const) {
    const opts = method === "HEAD" ? rootAuth : { ...rootAuth, body: { user: "u", role: "r" } };
    out.push({ name: `${method} ${path}`, method, path, opts, status: 405 });
  }
  // Authorization headers of every malformed shape: 401 everywhere, even where guest may read.
  const headers = [
    "Basic",
    "Basic !!!not-base64",
    "Basic cm9vdA==",
    "Basic cm9vdDpyb290cHc",
    "Basic  " + Buffer.from("root:rootpw").toString("base64"),
    "Basic cm9v dDpyb290cHc=",
    "Basic cm9v=DpyYg==",
    "Bearer sometoken",
    'Digest username="root"',
    "Token root:rootpw",
    "root:rootpw",
    basic("root", "wrong"),
    basic("root", "rootpw "),
    basic("ROOT", "rootpw"),
    basic("nobody", "x"),
    basic("u", ""),
    "Basic " + Buffer.from([0xff, 0x3a, 0x70]).toString("base64"),
    "Basic " + "A".repeat(4000),
  ];
  for (const authorization of headers) {
    out.push({ name: `users list with ${JSON.stringify(authorization.slice(0, 40))}`, method: "GET", path: "/v2/auth/users", opts: { authorization }, status: 401, message: "Insufficient credentials" });
    out.push({ name: `role update with ${JSON.stringify(authorization.slice(0, 40))}`, method: "PUT", path: "/v2/auth/roles/guest", opts: { authorization, body: { role: "guest", grant: { kv: { write: ["/*"] } } } }, status: 401, message: "Insufficient credentials" });
    out.push({ name: `disable with ${JSON.stringify(authorization.slice(0, 40))}`, method: "DELETE", path: "/v2/auth/enable", opts: { authorization }, status: 401, message: "Insufficient credentials" });
    out.push({ name: `key read with ${JSON.stringify(authorization.slice(0, 40))}`, method: "GET", path: "/v2/keys/a/k", opts: { authorization }, status: 401, errorCode: 110 });
    out.push({ name: `key write with ${JSON.stringify(authorization.slice(0, 40))}`, method: "PUT", path: "/v2/keys/a/k", opts: { authorization, form: { value: "hacked" } }, status: 401, errorCode: 110 });
  }
  // Authenticated but not allowed, and guest writes.
  for (const [method, path, opts] of [
    ["PUT", "/v2/keys/b/k", { auth: ["u", "upw"], form: { value: "x" } }],
    ["DELETE", "/v2/keys/a?recursive=true", { auth: ["u", "upw"] }],
    ["GET", "/v2/keys/?recursive=true", { auth: ["u", "upw"] }],
    ["PUT", "/v2/keys/a/k", { form: { value: "x" } }],
    ["POST", "/v2/keys/a", { form: { value: "x" } }],
    ["DELETE", "/v2/keys/a/k", {}],
  ] as Array<[string, string, CallOptions]>) {
    out.push({ name: `${method} ${path} not allowed`, method, path, opts, status: 401, errorCode: 110 });
  }
  out.push({ name: "PUT enable again without credentials", method: "PUT", path: "/v2/auth/enable", opts: {}, status: 401 });
  out.push({ name: "PUT enable again as root", method: "PUT", path: "/v2/auth/enable", opts: rootAuth, status: 409, message: "auth: already enabled" });
  out.push({ name: "member add without root", method: "POST", path: "/v2/members", opts: { body: { peerURLs: ["http://127.0.0.1:1"] } }, status: 401, message: "Insufficient credentials" });
  return out;
}

test("hundreds of malformed auth requests get their 4xx and change nothing", async () => {
  const before = await snapshot();
  const all = cases().filter((c) => !(c.kvctlOnly === true && process.env["KVCTL_TEST_SERVER"] === "etcd"));
  assert.ok(all.length >= 250, `only ${all.length} cases`);
  for (const c of all) {
    const r = await call(srv.url, c.method, c.path, c.opts);
    assert.equal(r.status, c.status, `${c.name}: ${r.status} ${r.text.slice(0, 200)}`);
    if (c.message !== undefined) assert.deepEqual(r.json, { message: c.message }, c.name);
    if (c.errorCode !== undefined) assert.equal((r.json as { errorCode?: number } | undefined)?.errorCode, c.errorCode, c.name);
  }
  assert.deepEqual(await snapshot(), before);
});

/** A PUT with root credentials and a body, on the wire as given (invalid UTF-8 escapes kept). */
function rawPut(path: string, body: string): Buffer {
  const head = `PUT ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic(...ROOT)}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
  return Buffer.from(head + body);
}

test("raw requests with non-ASCII Authorization bytes or invalid names are refused and change nothing", async () => {
  const before = await snapshot();
  const port = new URL(srv.url).port;
  const raws = [
    Buffer.concat([Buffer.from("GET /v2/keys/a/k HTTP/1.1\r\nHost: x\r\nAuthorization: Basic "), Buffer.from([0xff, 0xfe, 0xfd]), Buffer.from("\r\nConnection: close\r\n\r\n")]),
    Buffer.concat([Buffer.from("GET /v2/auth/users HTTP/1.1\r\nHost: x\r\nAuthorization: "), Buffer.from([0xc3, 0xa9]), Buffer.from("\r\nConnection: close\r\n\r\n")]),
    rawPut("/v2/auth/users/%C0%AF", '{"user":"\\u00c0\\u00af","password":"p"}'),
    rawPut("/v2/auth/roles/%ED%A0%80", '{"role":"\\ud800"}'),
  ];
  for (const bytes of raws) {
    const text = await rawRequest(srv.url, bytes);
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
    assert.ok(status >= 400 && status < 500, `port ${port}: got ${JSON.stringify(text.slice(0, 120))}`);
  }
  assert.deepEqual(await snapshot(), before);
});
