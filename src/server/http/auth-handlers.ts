// /v2/auth: the enable switch, users and roles, as etcd 3.4's v2http answers them
// (client_auth.go; statuses per REFERENCE.md where they differ from the spec). Reads are
// served from the local replicated state; every change is proposed through the log and
// answered from its apply result. Passwords are hashed here, before proposing, so the log
// only ever carries the hash.
import type { IncomingMessage, ServerResponse, OutgoingHttpHeaders } from "node:http";
import { Header } from "../../api/headers.ts";
import { V2AuthError, hashPassword, permissionsEmpty, type V2AuthOp, type V2AuthState, type V2Permissions, type V2RoleRecord } from "../../auth/index.ts";
import type { CommandBody } from "../request.ts";
import type { ApplyResult } from "../apply.ts";
import { cleanPath } from "./path.ts";
import { parseQuery } from "./form.ts";
import { readBody, BodyTooLargeError } from "./body.ts";
import { decodeRoleBody, decodeUserBody } from "./auth-body.ts";
import { requireRoot, requireRootForWrite, type AuthAccessHost } from "./auth-access.ts";
import { HttpMessageError, methodNotAllowed, notFound, writeJson } from "./respond.ts";

export { requireRootForWrite } from "./auth-access.ts";

/** Auth bodies are a user or a role: far below this. Larger bodies are refused unread. */
export const MAX_AUTH_BODY = 1 << 20;

/** What /v2/auth uses of the member: the access checks' view, and the log for changes. */
export interface AuthAdminHost extends AuthAccessHost {
  /** Resolves with the change's apply result (`auth` holds the outcome). */
  propose(body: Extract<CommandBody, { t: "auth" }>): Promise<ApplyResult>;
}

export interface AuthContext {
  server: AuthAdminHost;
  clusterId: string;
}

const utf8Fatal = new TextDecoder("utf-8", { fatal: true });

/** Does the raw request path percent-decode to valid UTF-8? (Go keeps the bytes; such a name never matches a user.) */
function rawPathIsUtf8(req: IncomingMessage): boolean {
  const url = req.url ?? "";
  const q = url.indexOf("?");
  const raw = q < 0 ? url : url.slice(0, q);
  if (!raw.includes("%")) return true;
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === "%" && i + 2 < raw.length) {
      bytes.push(parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      for (const b of Buffer.from(raw[i]!, "utf8")) bytes.push(b);
    }
  }
  try {
    utf8Fatal.decode(Uint8Array.from(bytes));
    return true;
  } catch {
    return false;
  }
}

function allowMethod(req: IncomingMessage, allowed: string): void {
  if (!allowed.split(",").includes(req.method ?? "")) {
    req.resume();
    throw methodNotAllowed(allowed);
  }
}

function permissionsJSON(p: V2Permissions): { kv: V2Permissions } {
  return { kv: { read: p.read, write: p.write } };
}

/** A role as etcd's Role struct marshals (grant/revoke only when stored). */
function roleJSON(r: Readonly<V2RoleRecord>): Record<string, unknown> {
  const out: Record<string, unknown> = { role: r.role, permissions: permissionsJSON(r.permissions) };
  if (r.grant !== undefined) out["grant"] = permissionsJSON(r.grant);
  if (r.revoke !== undefined) out["revoke"] = permissionsJSON(r.revoke);
  return out;
}

function writeBody(res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: unknown): void {
  // Go's json.Encoder ends the value with a newline.
  writeJson(res, status, headers, JSON.stringify(body) + "\n");
}

/** etcd answers a query that does not parse with its generic 500 on the endpoints that call ParseForm. */
function checkQuery(rawQuery: string, headers: OutgoingHttpHeaders): void {
  if (parseQuery(rawQuery).error !== undefined) throw new HttpMessageError(500, "Internal Server Error", headers);
}

/** Routes /v2/auth/<...>; `path` is the decoded, clean request path. */
export async function handleAuth(req: IncomingMessage, res: ServerResponse, path: string, rawQuery: string, ctx: AuthContext): Promise<void> {
  const sub = path.slice("/v2/auth".length);
  if (!(sub === "/enable" || /^\/(users|roles)(\/|$)/.test(sub))) {
    req.resume();
    throw notFound();
  }
  if (sub === "/enable") return enableDisable(req, res, ctx);
  const pieces = cleanPath(sub).split("/");
  const kind = pieces[1] === "users" ? "users" : "roles";
  if (pieces.length === 2) return kind === "users" ? listUsers(req, res, rawQuery, ctx) : listRoles(req, res, rawQuery, ctx);
  if (pieces.length !== 3) {
    req.resume();
    throw new HttpMessageError(400, "Invalid path");
  }
  const name = pieces[2]!;
  const nameIsUtf8 = rawPathIsUtf8(req);
  return kind === "users" ? forUser(req, res, { name, nameIsUtf8, rawQuery }, ctx) : forRole(req, res, { name, nameIsUtf8 }, ctx);
}

function clusterHeaders(ctx: AuthContext): OutgoingHttpHeaders {
  return { [Header.kvClusterId]: ctx.clusterId, [Header.etcdClusterId]: ctx.clusterId };
}

function state(ctx: AuthContext): V2AuthState {
  return ctx.server.auth;
}

async function enableDisable(req: IncomingMessage, res: ServerResponse, ctx: AuthContext): Promise<void> {
  allowMethod(req, "GET,PUT,DELETE");
  req.resume();
  await requireRootForWrite(req, ctx.server);
  const headers = clusterHeaders(ctx);
  if (req.method === "GET") return writeBody(res, 200, headers, { enabled: state(ctx).enabled });
  await proposeAuth(ctx, req.method === "PUT" ? { kind: "enable" } : { kind: "disable" }, res, headers);
}

/** The common start of the root-only list endpoints: GET only, root only, no query. */
async function rootList(req: IncomingMessage, rawQuery: string, ctx: AuthContext): Promise<{ headers: ReturnType<typeof clusterHeaders>; auth: V2AuthState }> {
  allowMethod(req, "GET");
  req.resume();
  await requireRoot(req, ctx.server);
  const headers = clusterHeaders(ctx);
  const auth = state(ctx);
  checkQuery(rawQuery, headers);
  return { headers, auth };
}

async function listUsers(req: IncomingMessage, res: ServerResponse, rawQuery: string, ctx: AuthContext): Promise<void> {
  const { headers, auth } = await rootList(req, rawQuery, ctx);
  const users: Array<Record<string, unknown>> = [];
  for (const name of auth.listedUserNames()) {
    const u = auth.getUser(name)!;
    // Roles that no longer exist are skipped in the list (GET of the user fails on them).
    const roles = (u.roles ?? []).flatMap((r) => {
      const role = auth.getRole(r);
      return role === undefined ? [] : [roleJSON(role)];
    });
    users.push(roles.length > 0 ? { user: u.user, roles } : { user: u.user });
  }
  writeBody(res, 200, headers, { users: users.length > 0 ? users : null });
}

async function listRoles(req: IncomingMessage, res: ServerResponse, rawQuery: string, ctx: AuthContext): Promise<void> {
  const { headers, auth } = await rootList(req, rawQuery, ctx);
  writeBody(res, 200, headers, { roles: auth.listedRoleNames().map((n) => roleJSON(auth.getRole(n)!)) });
}

interface Target {
  name: string;
  /** False when the path's name is not UTF-8: Go keeps those bytes, so it names nothing. */
  nameIsUtf8: boolean;
}

async function readAuthBody(req: IncomingMessage, headers: OutgoingHttpHeaders): Promise<Buffer> {
  try {
    return await readBody(req, MAX_AUTH_BODY);
  } catch (err) {
    if (err instanceof BodyTooLargeError) throw new HttpMessageError(413, "Request body too large", headers);
    throw err;
  }
}

async function forUser(req: IncomingMessage, res: ServerResponse, t: Target & { rawQuery: string }, ctx: AuthContext): Promise<void> {
  allowMethod(req, "GET,PUT,DELETE");
  if (req.method !== "PUT") req.resume();
  await requireRoot(req, ctx.server);
  const headers = clusterHeaders(ctx);
  const missing = (): HttpMessageError => new HttpMessageError(404, `auth: User ${t.name} does not exist.`, headers);
  if (req.method === "GET") {
    const auth = state(ctx);
    const u = t.nameIsUtf8 ? auth.getUser(t.name) : undefined;
    if (u === undefined) throw missing();
    checkQuery(t.rawQuery, headers);
    const roles = (u.roles ?? []).map((r) => {
      const role = auth.getRole(r);
      if (role === undefined) throw new HttpMessageError(404, `auth: Role ${r} does not exist.`, headers);
      return roleJSON(role);
    });
    return writeBody(res, 200, headers, roles.length > 0 ? { user: u.user, roles } : { user: u.user });
  }
  if (req.method === "DELETE") {
    if (!t.nameIsUtf8) throw new HttpMessageError(404, `auth: User ${t.name} does not exist`, headers);
    await proposeAuth(ctx, { kind: "deleteUser", user: t.name }, res, headers);
    ctx.server.passwordVerifier.forgetUser(t.name);
    return;
  }
  const u = decodeUserBody(await readAuthBody(req, headers));
  if (u === undefined) throw new HttpMessageError(400, "Invalid JSON in request body.", headers);
  if (!t.nameIsUtf8 || u.user !== t.name) throw new HttpMessageError(400, "User JSON name does not match the name in the URL", headers);
  const hasRoles = (u.roles?.length ?? 0) > 0;
  const changesRoles = (u.grant?.length ?? 0) > 0 || (u.revoke?.length ?? 0) > 0;
  if (changesRoles && hasRoles) throw new HttpMessageError(400, "User JSON contains both roles and grant/revoke", headers);
  // The KDF runs only for a request that got this far, and only its hash enters the log.
  const passwordHash = u.password === "" ? null : await hashPassword(u.password);
  let op: V2AuthOp;
  if (changesRoles) op = { kind: "updateUser", user: u.user, passwordHash, grant: u.grant, revoke: u.revoke };
  else if (hasRoles) op = { kind: "createUser", user: u.user, passwordHash, roles: u.roles ?? [] };
  else op = { kind: "createOrUpdateUser", user: u.user, passwordHash, roles: u.roles };
  await proposeAuth(ctx, op, res, headers);
  if (passwordHash !== null) ctx.server.passwordVerifier.forgetUser(u.user);
}

async function forRole(req: IncomingMessage, res: ServerResponse, t: Target, ctx: AuthContext): Promise<void> {
  allowMethod(req, "GET,PUT,DELETE");
  if (req.method !== "PUT") req.resume();
  await requireRoot(req, ctx.server);
  const headers = clusterHeaders(ctx);
  if (req.method === "GET") {
    const role = t.nameIsUtf8 ? state(ctx).getRole(t.name) : undefined;
    if (role === undefined) throw new HttpMessageError(404, `auth: Role ${t.name} does not exist.`, headers);
    return writeBody(res, 200, headers, roleJSON(role));
  }
  if (req.method === "DELETE") {
    if (!t.nameIsUtf8) throw new HttpMessageError(404, `auth: Role ${t.name} doesn't exist.`, headers);
    return proposeAuth(ctx, { kind: "deleteRole", role: t.name }, res, headers);
  }
  const r = decodeRoleBody(await readAuthBody(req, headers));
  if (r === undefined) throw new HttpMessageError(400, "Invalid JSON in request body.", headers);
  if (!t.nameIsUtf8 || r.role !== t.name) throw new HttpMessageError(400, "Role JSON name does not match the name in the URL", headers);
  if (permissionsEmpty(r.grant) && permissionsEmpty(r.revoke)) {
    const record: V2RoleRecord = { role: r.role, permissions: r.permissions };
    if (r.grant !== null) record.grant = r.grant;
    if (r.revoke !== null) record.revoke = r.revoke;
    return proposeAuth(ctx, { kind: "createRole", role: record }, res, headers);
  }
  if (!permissionsEmpty(r.permissions)) throw new HttpMessageError(400, "Role JSON contains both permissions and grant/revoke", headers);
  return proposeAuth(ctx, { kind: "updateRole", role: r.role, grant: r.grant, revoke: r.revoke }, res, headers);
}

/** Proposes an auth change and answers with its apply result. */
async function proposeAuth(ctx: AuthContext, op: V2AuthOp, res: ServerResponse, headers: OutgoingHttpHeaders): Promise<void> {
  const applied = await ctx.server.propose({ t: "auth", time: Date.now(), op });
  if (!applied.ok) throw applied.error;
  const result = applied.auth;
  if (result === undefined) throw new Error("auth command applied without an auth result");
  if (!result.ok) throw toHttpError(result.error, headers);
  switch (result.kind) {
    case "user":
      return writeBody(res, result.created ? 201 : 200, headers, { user: result.user.user, roles: result.user.roles });
    case "role":
      return writeBody(res, result.created ? 201 : 200, headers, roleJSON(result.role));
    case "done":
      return writeJson(res, 200, headers, "");
  }
}

function toHttpError(err: V2AuthError, headers: OutgoingHttpHeaders): HttpMessageError {
  return new HttpMessageError(err.status, err.message, headers);
}
