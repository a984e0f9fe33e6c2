// v3 user …, role … and auth enable|disable (user_command.go, role_command.go,
// auth_command.go): etcdctl v3's argument checks and words, the gateway's
// /v3/auth/* requests, and the printers. Passwords are asked for on a terminal without
// echo (prompts on stderr); without a terminal they are the next lines of stdin.

import type { WireHeaderResponse, WireRoleGetResponse, WireRoleListResponse, WireUserGetResponse, WireUserListResponse } from "../../../client/v3-types.ts";
import { V3Error } from "../../../api/v3-errors.ts";
import type { Io } from "../../io.ts";
import { promptPassword } from "../../tty.ts";
import type { V3Invocation } from "./argv.ts";
import { printOut, v3Fail, V3Exit, withV3Context, type V3Context } from "./context.ts";
import { prefixRangeEnd, printHeaderOnly, printRoleGet, printRoleList, printUserGet, printUserList, revokePermissionLine } from "./printers-admin.ts";

const bad = (message: string): never => {
  throw v3Fail(V3Exit.BadArgs, message);
};


/** etcdctl's readPasswordInteractive: asked twice, must match and not be empty. */
async function readPasswordTwice(name: string): Promise<string> {
  const p1 = await promptPassword(`Password of ${name}: `);
  if (p1 === "") bad("empty password");
  const p2 = await promptPassword(`Type password of ${name} again for confirmation: `);
  if (p1 !== p2) bad("given passwords are different");
  return p1;
}

/** --interactive=false: fmt.Scanf("%s"), the first word of stdin. */
async function readPasswordWord(): Promise<string> {
  return (await promptPassword("")).split(/\s+/)[0] ?? "";
}

/** clientv3.StrToPermissionType. */
function permissionType(s: string): "READ" | "WRITE" | "READWRITE" {
  const t = s.toUpperCase();
  if (t === "READ" || t === "WRITE" || t === "READWRITE") return t;
  return bad(`invalid permission type: ${s}`);
}

/** etcdctl's permRange: [key, rangeEnd) as bytes from the arguments and --prefix/--from-key. */
export function permRange(args: readonly string[], opts: { prefix: boolean; fromKey: boolean }): { key: Buffer; end: Buffer } {
  const key = args[0] ?? "";
  const zero = Buffer.from([0]);
  const none = Buffer.alloc(0);
  if (key === "") {
    if (opts.prefix && opts.fromKey) bad("--from-key and --prefix flags are mutually exclusive");
    return { key: zero, end: opts.prefix || opts.fromKey ? zero : none };
  }
  const k = Buffer.from(key, "utf8");
  if (args.length === 1) {
    if (opts.prefix) {
      if (opts.fromKey) bad("--from-key and --prefix flags are mutually exclusive");
      return { key: k, end: prefixRangeEnd(k) };
    }
    return { key: k, end: opts.fromKey ? zero : none };
  }
  if (opts.prefix) bad("unexpected endkey argument with --prefix flag");
  if (opts.fromKey) bad("unexpected endkey argument with --from-key flag");
  return { key: k, end: Buffer.from(args[1] ?? "", "utf8") };
}

async function call<T>(ctx: V3Context, path: string, body: unknown): Promise<T> {
  return ctx.request((signal) => ctx.client.call<T>(path, body, { signal }));
}

async function user(inv: V3Invocation, io: Io): Promise<number> {
  const a = inv.args;
  const f = inv.flags;
  const one = (what: string): string => (a.length === 1 ? (a[0] ?? "") : bad(`user ${what} command requires user name as its argument`));
  switch (inv.path[1]) {
    case "add": {
      const arg = one("add");
      let name = arg;
      let password = "";
      const noPassword = f["no-password"] === true;
      const fromFlag = typeof f["new-user-password"] === "string" ? f["new-user-password"] : "";
      if (!noPassword && fromFlag === "") {
        const colon = arg.indexOf(":");
        if (colon !== -1) {
          name = arg.slice(0, colon);
          password = arg.slice(colon + 1);
          if (name === "") bad("empty user name is not allowed");
        }
      } else password = fromFlag;
      return withV3Context(inv, io, async (ctx) => {
        if (!noPassword && fromFlag === "" && !arg.includes(":")) {
          password = f["interactive"] === false ? await readPasswordWord() : await readPasswordTwice(arg);
        }
        const body = noPassword ? { name, options: { no_password: true } } : { name, password };
        const r = await call<WireHeaderResponse>(ctx, "/v3/auth/user/add", body);
        printOut(io, () => printHeaderOnly(`User ${name} created`, r, ctx.print));
        return V3Exit.Success;
      });
    }
    case "delete": {
      const name = one("delete");
      return withV3Context(inv, io, async (ctx) => {
        const r = await call<WireHeaderResponse>(ctx, "/v3/auth/user/delete", { name });
        printOut(io, () => printHeaderOnly(`User ${name} deleted`, r, ctx.print));
        return V3Exit.Success;
      });
    }
    case "get": {
      const name = one("get");
      return withV3Context(inv, io, async (ctx) => {
        const r = await call<WireUserGetResponse>(ctx, "/v3/auth/user/get", { name });
        if (f["detail"] !== true) {
          printOut(io, () => printUserGet(name, r, ctx.print));
          return V3Exit.Success;
        }
        io.stdout(`User: ${name}\n`);
        for (const role of r.roles ?? []) {
          io.stdout("\n");
          const rr = await call<WireRoleGetResponse>(ctx, "/v3/auth/role/get", { role });
          printOut(io, () => printRoleGet(role, rr, ctx.print));
        }
        return V3Exit.Success;
      });
    }
    case "list":
      if (a.length !== 0) bad("user list command requires no arguments");
      return withV3Context(inv, io, async (ctx) => {
        const r = await call<WireUserListResponse>(ctx, "/v3/auth/user/list", {});
        printOut(io, () => printUserList(r, ctx.print));
        return V3Exit.Success;
      });
    case "passwd": {
      if (a.length !== 1) bad("user passwd command requires user name as its argument");
      const name = a[0] ?? "";
      return withV3Context(inv, io, async (ctx) => {
        const password = f["interactive"] === false ? await readPasswordWord() : await readPasswordTwice(name);
        const r = await call<WireHeaderResponse>(ctx, "/v3/auth/user/changepw", { name, password });
        printOut(io, () => printHeaderOnly("Password updated", r, ctx.print));
        return V3Exit.Success;
      });
    }
    case "grant-role":
    case "revoke-role": {
      const grant = inv.path[1] === "grant-role";
      if (a.length !== 2) {
        bad(grant ? "user grant command requires user name and role name as its argument" : "user revoke-role requires user name and role name as its argument");
      }
      const [name = "", role = ""] = a;
      return withV3Context(inv, io, async (ctx) => {
        const r = grant
          ? await call<WireHeaderResponse>(ctx, "/v3/auth/user/grant", { user: name, role })
          : await call<WireHeaderResponse>(ctx, "/v3/auth/user/revoke", { name, role });
        const line = grant ? `Role ${role} is granted to user ${name}` : `Role ${role} is revoked from user ${name}`;
        printOut(io, () => printHeaderOnly(line, r, ctx.print));
        return V3Exit.Success;
      });
    }
    default:
      return bad(`unknown command "user ${inv.path[1] ?? ""}"`);
  }
}

async function role(inv: V3Invocation, io: Io): Promise<number> {
  const a = inv.args;
  const opts = { prefix: inv.flags["prefix"] === true, fromKey: inv.flags["from-key"] === true };
  const one = (what: string): string => (a.length === 1 ? (a[0] ?? "") : bad(`role ${what} command requires role name as its argument`));
  switch (inv.path[1]) {
    case "add":
    case "delete": {
      const verb = inv.path[1];
      const name = one(verb);
      return withV3Context(inv, io, async (ctx) => {
        const r = await call<WireHeaderResponse>(ctx, `/v3/auth/role/${verb}`, verb === "add" ? { name } : { role: name });
        printOut(io, () => printHeaderOnly(`Role ${name} ${verb === "add" ? "created" : "deleted"}`, r, ctx.print));
        return V3Exit.Success;
      });
    }
    case "get": {
      const name = one("get");
      return withV3Context(inv, io, async (ctx) => {
        const r = await call<WireRoleGetResponse>(ctx, "/v3/auth/role/get", { role: name });
        printOut(io, () => printRoleGet(name, r, ctx.print));
        return V3Exit.Success;
      });
    }
    case "list":
      if (a.length !== 0) bad("role list command requires no arguments");
      return withV3Context(inv, io, async (ctx) => {
        const r = await call<WireRoleListResponse>(ctx, "/v3/auth/role/list", {});
        printOut(io, () => printRoleList(r, ctx.print));
        return V3Exit.Success;
      });
    case "grant-permission": {
      if (a.length < 3) bad("role grant command requires role name, permission type, and key [endkey] as its argument");
      const name = a[0] ?? "";
      const permType = permissionType(a[1] ?? "");
      const { key, end } = permRange(a.slice(2), opts);
      return withV3Context(inv, io, async (ctx) => {
        const perm: Record<string, string> = { permType, key: key.toString("base64") };
        if (end.length > 0) perm["range_end"] = end.toString("base64");
        const r = await call<WireHeaderResponse>(ctx, "/v3/auth/role/grant", { name, perm });
        printOut(io, () => printHeaderOnly(`Role ${name} updated`, r, ctx.print));
        return V3Exit.Success;
      });
    }
    case "revoke-permission": {
      if (a.length < 2) bad("role revoke-permission command requires role name and key [endkey] as its argument");
      const name = a[0] ?? "";
      const { key, end } = permRange(a.slice(1), opts);
      return withV3Context(inv, io, async (ctx) => {
        const body: Record<string, string> = { role: name, key: key.toString("base64") };
        if (end.length > 0) body["range_end"] = end.toString("base64");
        const r = await call<WireHeaderResponse>(ctx, "/v3/auth/role/revoke", body);
        printOut(io, () => printHeaderOnly(revokePermissionLine(name, a[1] ?? "", end.toString("utf8")), r, ctx.print));
        return V3Exit.Success;
      });
    }
    default:
      return bad(`unknown command "role ${inv.path[1] ?? ""}"`);
  }
}

const rootRoleMissing = "etcdserver: root user does not have root role";

async function auth(inv: V3Invocation, io: Io): Promise<number> {
  const enable = inv.path[1] === "enable";
  if (inv.args.length !== 0) bad(`auth ${enable ? "enable" : "disable"} command does not accept any arguments`);
  return withV3Context(inv, io, async (ctx) => {
    if (!enable) {
      await call<WireHeaderResponse>(ctx, "/v3/auth/disable", {});
      io.stdout("Authentication Disabled\n");
      return V3Exit.Success;
    }
    // etcdctl creates the root role and grants it to root when only that is missing.
    await ctx.request(async (signal) => {
      for (;;) {
        try {
          await ctx.client.call<WireHeaderResponse>("/v3/auth/enable", {}, { signal });
          return;
        } catch (err) {
          if (!(err instanceof V3Error) || err.message !== rootRoleMissing) throw err;
          await ctx.client.call<WireHeaderResponse>("/v3/auth/role/add", { name: "root" }, { signal });
          await ctx.client.call<WireHeaderResponse>("/v3/auth/user/grant", { user: "root", role: "root" }, { signal });
        }
      }
    });
    io.stdout("Authentication Enabled\n");
    return V3Exit.Success;
  });
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  switch (inv.path[0]) {
    case "user":
      return user(inv, io);
    case "role":
      return role(inv, io);
    default:
      return auth(inv, io);
  }
}
