// role add|get|list|remove|grant|revoke, with etcdctl v2's arguments, output and exits
// (ctlv2/command/role_commands.go): every failure is the bare error text on stderr and
// exit 1; grant/revoke check --path and the permission flags before the role name.

import { canonicalUrlPath } from "../../client/go-url.ts";
import {
  addRole,
  getRole,
  grantRoleKV,
  listRoles,
  removeRole,
  revokeRoleKV,
  sameRole,
  type PermissionType,
  type V2Role,
} from "../../client/v2-auth.ts";
import { CliExit, ExitCode } from "../exit-codes.ts";
import type { Io } from "../context.ts";
import type { Invocation } from "../invocation.ts";
import { exit1, requests, requireNoArgs, withAuthApi } from "./auth.ts";

/** etcdctl's mustRoleAPIAndName: exactly one argument. */
function roleName(inv: Invocation): string {
  const name = inv.args[0];
  if (inv.args.length !== 1 || name === undefined) throw exit1("Please provide a role name");
  return name;
}

/** `--path` and exactly one of --read / --write / --readwrite, checked as etcdctl does. */
export function permissionArgs(flags: Readonly<Record<string, unknown>>): { path: string; perm: PermissionType } {
  const path = typeof flags["path"] === "string" ? flags["path"] : "";
  if (path === "") throw exit1("No path specified; please use `--path`");
  const canonical = canonicalUrlPath(path);
  if (canonical !== path) throw exit1(`Not canonical path; please use \`--path=${canonical}\``);
  const chosen = (["read", "write", "readwrite"] as const).filter((p) => flags[p] === true);
  const perm = chosen[0];
  if (chosen.length !== 1 || perm === undefined) throw exit1("Please specify exactly one of --read, --write or --readwrite");
  return { path, perm };
}

export function formatRole(r: V2Role): string {
  const lines = (list: string[] | null): string => (list ?? []).map((p) => `\t${p}\n`).join("");
  return `Role: ${r.role}\nKV Read:\n${lines(r.permissions.kv.read)}KV Write:\n${lines(r.permissions.kv.write)}`;
}

export async function run(inv: Invocation, io: Io): Promise<number> {
  switch (inv.subcommand) {
    case "list":
      requireNoArgs(inv);
      return withAuthApi(inv, io, async (ctx) => {
        const roles = await requests(ctx, "Listing roles", (signal) => listRoles(ctx.cluster, { signal }));
        io.stdout(roles.map((r) => `${r}\n`).join(""));
        return ExitCode.Success;
      });
    case "add": {
      const name = roleName(inv);
      return withAuthApi(inv, io, async (ctx) => {
        await requests(ctx, `Adding role ${name}`, async (signal) => {
          // Any failure to read the role means "not there yet" to etcdctl.
          const current = await getRole(ctx.cluster, name, { signal }).catch(() => undefined);
          if (current !== undefined) throw exit1(`Role ${name} already exists`);
          await addRole(ctx.cluster, name, { signal });
        });
        io.stdout(`Role ${name} created\n`);
        return ExitCode.Success;
      });
    }
    case "get": {
      const name = roleName(inv);
      return withAuthApi(inv, io, async (ctx) => {
        const role = await requests(ctx, `Reading role ${name}`, (signal) => getRole(ctx.cluster, name, { signal }));
        io.stdout(formatRole(role));
        return ExitCode.Success;
      });
    }
    case "remove": {
      const name = roleName(inv);
      return withAuthApi(inv, io, async (ctx) => {
        await requests(ctx, `Removing role ${name}`, (signal) => removeRole(ctx.cluster, name, { signal }));
        io.stdout(`Role ${name} removed\n`);
        return ExitCode.Success;
      });
    }
    case "grant":
    case "revoke": {
      const grant = inv.subcommand === "grant";
      const { path, perm } = permissionArgs(inv.flags);
      const name = roleName(inv);
      return withAuthApi(inv, io, async (ctx) => {
        const unchanged = await requests(ctx, `Updating role ${name}`, async (signal) => {
          const before = await getRole(ctx.cluster, name, { signal });
          const change = { prefixes: [path], perm };
          const after = grant
            ? await grantRoleKV(ctx.cluster, name, change, { signal })
            : await revokeRoleKV(ctx.cluster, name, change, { signal });
          return sameRole(before, after);
        });
        // etcdctl prints this without a newline, straight before the next line.
        if (unchanged) io.stdout(grant ? "Role unchanged; already granted" : "Role unchanged; already revoked");
        io.stdout(`Role ${name} updated\n`);
        return ExitCode.Success;
      });
    }
    default:
      throw new CliExit(ExitCode.BadAuth, `No help topic for '${inv.subcommand ?? ""}'\n`);
  }
}
