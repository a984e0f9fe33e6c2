// user add|get|list|remove|grant|revoke|passwd, with etcdctl v2's arguments, output and
// exits (ctlv2/command/user_commands.go): every failure is the bare error text on stderr
// and exit 1.
//
// Passwords: `user add name:password` takes it from the argument; otherwise `user add`
// and `user passwd` ask once for `New password: ` — on a terminal without echo, else
// from the next line of stdin (after the -u password's line, when that is read too), so
// scripts can pipe it: `printf '%s\n' "$pw" | kvctl user add bob`.

import {
  addUser,
  changePassword,
  getUser,
  goUserRoles,
  grantUser,
  listUsers,
  removeUser,
  revokeUser,
} from "../../client/v2-auth.ts";
import { CliExit, ExitCode } from "../exit-codes.ts";
import type { Io } from "../context.ts";
import type { Invocation } from "../invocation.ts";
import { askNewPassword, exit1, requests, requireNoArgs, withAuthApi } from "./auth.ts";

/** etcdctl's mustUserAPIAndName: exactly one argument. */
function userName(inv: Invocation): string {
  const name = inv.args[0];
  if (inv.args.length !== 1 || name === undefined) throw exit1("Please provide a username");
  return name;
}

/** `name:password` splits at the first colon (etcdctl's getUsernamePassword). */
export function splitUserArg(arg: string): { user: string; password: string | undefined } {
  const colon = arg.indexOf(":");
  return colon === -1 ? { user: arg, password: undefined } : { user: arg.slice(0, colon), password: arg.slice(colon + 1) };
}

/** `--roles` values (a repeatable flag: `--roles a --roles b`; no comma splitting, as etcdctl). */
function rolesFlag(inv: Invocation): readonly string[] {
  const v = inv.flags["roles"];
  return Array.isArray(v) ? v : [];
}

export function formatUser(u: { user: string; roles: readonly string[] }): string {
  return `User: ${u.user}\nRoles: ${u.roles.join(" ")}\n`;
}

export async function run(inv: Invocation, io: Io): Promise<number> {
  switch (inv.subcommand) {
    case "list":
      requireNoArgs(inv);
      return withAuthApi(inv, io, async (ctx) => {
        const users = await requests(ctx, "Listing users", (signal) => listUsers(ctx.cluster, { signal }));
        io.stdout(users.map((u) => `${u}\n`).join(""));
        return ExitCode.Success;
      });
    case "add": {
      const { user, password } = splitUserArg(userName(inv));
      return withAuthApi(inv, io, async (ctx) => {
        const pass = password ?? (await askNewPassword());
        await requests(ctx, `Adding user ${user}`, (signal) => addUser(ctx.cluster, user, pass, { signal }));
        io.stdout(`User ${user} created\n`);
        return ExitCode.Success;
      });
    }
    case "get": {
      const name = userName(inv);
      return withAuthApi(inv, io, async (ctx) => {
        const u = await requests(ctx, `Reading user ${name}`, (signal) => getUser(ctx.cluster, name, { signal }));
        io.stdout(formatUser({ user: u.user, roles: goUserRoles(u) }));
        return ExitCode.Success;
      });
    }
    case "remove": {
      const name = userName(inv);
      return withAuthApi(inv, io, async (ctx) => {
        await requests(ctx, `Removing user ${name}`, (signal) => removeUser(ctx.cluster, name, { signal }));
        io.stdout(`User ${name} removed\n`);
        return ExitCode.Success;
      });
    }
    case "grant":
    case "revoke": {
      const grant = inv.subcommand === "grant";
      // etcdctl checks the roles before the user name.
      const roles = rolesFlag(inv);
      if (roles.length === 0) throw exit1("No roles specified; please use `--roles`");
      const name = userName(inv);
      return withAuthApi(inv, io, async (ctx) => {
        await requests(ctx, `Updating user ${name}`, (signal) =>
          grant ? grantUser(ctx.cluster, name, roles, { signal }) : revokeUser(ctx.cluster, name, roles, { signal }),
        );
        io.stdout(`User ${name} updated\n`);
        return ExitCode.Success;
      });
    }
    case "passwd": {
      // The whole argument is the name here, colon and all (etcdctl does not split it).
      const name = userName(inv);
      return withAuthApi(inv, io, async (ctx) => {
        const pass = await askNewPassword();
        await requests(ctx, `Changing the password of ${name}`, (signal) => changePassword(ctx.cluster, name, pass, { signal }));
        io.stdout("Password updated\n");
        return ExitCode.Success;
      });
    }
    default:
      throw new CliExit(ExitCode.BadAuth, `No help topic for '${inv.subcommand ?? ""}'\n`);
  }
}
