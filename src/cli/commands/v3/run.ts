// `kvctl v3 …`: parse with etcdctl v3's grammar, print help for a bare group or --help,
// check the output format, then load the one module of the command. Every failure ends
// as etcdctl's `Error: <message>` line and exit code.

import { CliExit } from "../../exit-codes.ts";
import type { Io } from "../../io.ts";
import { parseV3Argv, V3UsageError, type V3Invocation } from "./argv.ts";
import { v3Fail, V3Exit } from "./context.ts";
import { outputFormats } from "./printers.ts";

type V3Module = { run(inv: V3Invocation, io: Io): Promise<number> };

const loaders: Readonly<Record<string, () => Promise<V3Module>>> = {
  get: () => import("./kv.ts"),
  put: () => import("./kv.ts"),
  del: () => import("./kv.ts"),
  compaction: () => import("./kv.ts"),
  txn: () => import("./txn.ts"),
  watch: () => import("./watch.ts"),
  lease: () => import("./lease.ts"),
  user: () => import("./auth.ts"),
  role: () => import("./auth.ts"),
  auth: () => import("./auth.ts"),
  alarm: () => import("./maintenance.ts"),
  defrag: () => import("./maintenance.ts"),
  snapshot: () => import("./snapshot.ts"),
  endpoint: () => import("./endpoint.ts"),
  member: () => import("./member.ts"),
  "move-leader": () => import("./move-leader.ts"),
  lock: () => import("./lock.ts"),
  elect: () => import("./elect.ts"),
  version: () => import("./version.ts"),
  "make-mirror": () => import("./make-mirror.ts"),
  check: () => import("./check.ts"),
};

/**
 * --discovery-srv: the endpoints from the domain's SRV records (etcdctl's
 * endpointsFromCmd); without --insecure-discovery the http ones are dropped with a line on
 * stderr; none found leaves --endpoints. A failed lookup is `Error: dns lookup errors: …`, exit 1.
 */
async function discoverEndpoints(inv: V3Invocation, io: Io): Promise<void> {
  const { srvClientEndpoints } = await import("../../../client/srv.ts");
  const g = inv.globals;
  let eps: string[];
  try {
    eps = await srvClientEndpoints(g.discoverySrv ?? "", g.discoverySrvName === undefined ? {} : { serviceName: g.discoverySrvName });
  } catch (err) {
    throw v3Fail(V3Exit.Error, err instanceof Error ? err.message : String(err));
  }
  if (!g.insecureDiscovery) {
    eps = eps.filter((ep) => {
      if (!ep.startsWith("http://")) return true;
      io.stderr(`ignoring discovered insecure endpoint ${JSON.stringify(ep)}\n`);
      return false;
    });
  }
  if (eps.length > 0) g.endpoints = eps;
}

/** Runs `kvctl v3 <argv>`; returns the exit code. */
export async function runV3(argv: readonly string[], io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  try {
    const inv = parseV3Argv(argv, env);
    const needsSub = inv.path.length === 1 && ["lease", "user", "role", "auth", "alarm", "snapshot", "endpoint", "member", "check", "completion"].includes(inv.path[0] ?? "");
    if (inv.help || inv.path.length === 0 || needsSub) {
      const { helpText } = await import("../../yargs-app.ts");
      io.stdout(await helpText(["v3", ...inv.path]));
      return V3Exit.Success;
    }
    if (inv.path[0] === "help") {
      // cobra's `help <command>`: that command's help (an unknown one: the group's).
      const { findV3Command } = await import("./argv.ts");
      const { v3Commands } = await import("../../spec.ts");
      const path: string[] = [];
      let level = v3Commands;
      for (const word of inv.args) {
        const c = findV3Command(level, word);
        if (c === undefined) break;
        path.push(c.name);
        level = c.subcommands ?? [];
      }
      const { helpText } = await import("../../yargs-app.ts");
      io.stdout(await helpText(["v3", ...path]));
      return V3Exit.Success;
    }
    if (inv.path[0] === "completion") {
      const { completionPath } = await import("../completion.ts");
      const { readFileSync } = await import("node:fs");
      io.stdout(readFileSync(completionPath(inv.path[1] === "zsh" ? "zsh" : inv.path[1] === "fish" ? "fish" : "bash"), "utf8"));
      return V3Exit.Success;
    }
    if (!(outputFormats as readonly string[]).includes(inv.globals.writeOut)) {
      throw v3Fail(V3Exit.BadFeature, "unsupported output format");
    }
    if (inv.path[0] === "migrate") {
      // etcdctl migrate rewrites an etcd 3.x data dir's v2 keys into its v3 store offline.
      throw v3Fail(V3Exit.BadFeature, "migrate is not supported: kvctl keeps the v2 and v3 key spaces in one data dir; to move an etcd into kvctl, use kvctl migrate (or kvctl v3 make-mirror)");
    }
    if (inv.globals.discoverySrv !== undefined) await discoverEndpoints(inv, io);
    const load = loaders[inv.path[0] ?? ""];
    if (load === undefined) throw v3Fail(V3Exit.Error, `unknown command "${inv.path[0] ?? ""}" for "kvctl v3"`);
    return await (await load()).run(inv, io);
  } catch (err) {
    if (err instanceof CliExit) {
      io.stderr(err.stderr);
      return err.exitCode;
    }
    if (err instanceof V3UsageError) {
      io.stderr(`Error: ${err.message}\n`);
      return err.exitCode;
    }
    io.stderr(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    return V3Exit.Error;
  }
}
