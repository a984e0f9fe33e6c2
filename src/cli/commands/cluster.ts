// cluster-health and member list|add|remove|update, with etcdctl v2's output and exits
// (ctlv2/command/cluster_health.go, member_commands.go). One deliberate difference:
// member add prints KV_NAME / KV_INITIAL_CLUSTER / KV_INITIAL_CLUSTER_STATE, the
// variables `kvctl serve` reads, where etcdctl prints ETCD_*.

import { setTimeout as sleep } from "node:timers/promises";
import type { V2MemberJSON } from "../../api/v2-types.ts";
import { addMember, getLeader, listMembers, removeMember, updateMember } from "../../client/members.ts";
import { getHealth } from "../../client/stats.ts";
import { NetworkError } from "../../client/errors.ts";
import { CliExit, ExitCode } from "../exit-codes.ts";
import { deadline, errorText, fail, goErrorText, withContext, type CommandContext, type Io } from "../context.ts";
import type { Invocation } from "../invocation.ts";
import { formatMemberList } from "../output.ts";

export async function run(inv: Invocation, io: Io): Promise<number> {
  if (inv.command === "cluster-health") return clusterHealth(inv, io);
  switch (inv.subcommand) {
    case "list":
      return memberList(inv, io);
    case "add":
      return memberAdd(inv, io);
    case "remove":
      return memberRemove(inv, io);
    case "update":
      return memberUpdate(inv, io);
    default:
      throw new CliExit(ExitCode.BadArgs, `No help topic for '${inv.subcommand ?? ""}'\n`);
  }
}

/** etcdctl's member commands print the bare error and exit 1. */
function bare(err: unknown, prefix = ""): CliExit {
  // Go prints err.Error(): a cluster error's text ends each endpoint's error with a newline.
  return err instanceof CliExit ? err : new CliExit(ExitCode.BadArgs, `${prefix}${goErrorText(err)}\n`);
}

async function members(ctx: CommandContext, signal: AbortSignal): Promise<V2MemberJSON[]> {
  return listMembers(ctx.cluster, { signal });
}

async function memberList(inv: Invocation, io: Io): Promise<number> {
  if (inv.args.length !== 0) throw new CliExit(ExitCode.BadArgs, "No arguments accepted\n");
  return withContext(inv, io, { sync: true }, async (ctx) => {
    // One deadline for both calls, as etcdctl shares one context.
    const d = deadline(inv.globals.totalTimeoutMs);
    try {
      const list = await members(ctx, d.signal).catch((err: unknown) => {
        throw bare(err);
      });
      const leader = await getLeader(ctx.cluster, { signal: d.signal }).catch((err: unknown) => {
        throw bare(err, "Failed to get leader:  ");
      });
      io.stdout(formatMemberList(list, leader.id));
      return ExitCode.Success;
    } finally {
      d.clear();
    }
  });
}

async function memberAdd(inv: Invocation, io: Io): Promise<number> {
  const [name, peerURL] = inv.args;
  if (inv.args.length !== 2 || name === undefined || peerURL === undefined) {
    throw new CliExit(ExitCode.BadArgs, "Provide a name and a single member peerURL\n");
  }
  return withContext(inv, io, { sync: true }, async (ctx) => {
    const d = deadline(inv.globals.totalTimeoutMs);
    try {
      const added = await addMember(ctx.cluster, peerURL, { signal: d.signal }).catch((err: unknown) => {
        throw bare(err);
      });
      io.stdout(`Added member named ${name} with ID ${added.id} to cluster\n`);
      const list = await members(ctx, d.signal).catch((err: unknown) => {
        throw bare(err);
      });
      io.stdout(formatJoinSettings(name, added.id, list));
      return ExitCode.Success;
    } finally {
      d.clear();
    }
  });
}

/**
 * The settings to start an added member with, as etcdctl's member add prints them but
 * with kvctl serve's variable names (KV_* where etcdctl prints ETCD_*). The new member
 * (not started, so nameless) is listed under the name given to `member add`.
 */
export function formatJoinSettings(name: string, newId: string, members: readonly V2MemberJSON[]): string {
  const conf = members.flatMap((m) => m.peerURLs.map((u) => `${m.id === newId ? name : m.name}=${u}`));
  return (
    `\nKV_NAME=${goQuote(name)}\n` +
    `KV_INITIAL_CLUSTER=${goQuote(conf.join(","))}\n` +
    `KV_INITIAL_CLUSTER_STATE="existing"\n`
  );
}

/** Go's %q (strconv.Quote): printable runes kept, the rest escaped Go's way. */
export function goQuote(s: string): string {
  const named: Readonly<Record<string, string>> = { "\x07": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", '"': '\\"', "\\": "\\\\" };
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    const esc = named[ch];
    if (esc !== undefined) out += esc;
    else if (ch === " " || /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(ch)) out += ch;
    else if (cp < 0x80) out += `\\x${cp.toString(16).padStart(2, "0")}`;
    else if (cp >= 0xd800 && cp <= 0xdfff) out += "\ufffd"; // a lone surrogate: Go decodes it as U+FFFD
    else if (cp <= 0xffff) out += `\\u${cp.toString(16).padStart(4, "0")}`;
    else out += `\\U${cp.toString(16).padStart(8, "0")}`;
  }
  return `${out}"`;
}

async function memberRemove(inv: Invocation, io: Io): Promise<number> {
  const id = inv.args[0];
  if (inv.args.length !== 1 || id === undefined) throw new CliExit(ExitCode.BadArgs, "Provide a single member ID\n");
  return withContext(inv, io, { sync: true }, async (ctx) => {
    const d = deadline(inv.globals.totalTimeoutMs);
    try {
      const list = await members(ctx, d.signal).catch((err: unknown) => {
        throw bare(err, "Error while verifying ID against known members: ");
      });
      let found = false;
      for (const m of list) {
        if (m.id === id) found = true;
        if (m.name === id) {
          io.stderr(`Found a member named ${m.name}; if this is correct, please use its ID, eg:\n\tkvctl member remove ${m.id}\n\n`);
        }
      }
      if (!found) throw new CliExit(ExitCode.BadArgs, `Couldn't find a member in the cluster with an ID of ${id}.\n`);
      await removeMember(ctx.cluster, id, { signal: d.signal }).catch((err: unknown) => {
        throw bare(err, `Received an error trying to remove member ${id}: `);
      });
      io.stdout(`Removed member ${id} from cluster\n`);
      return ExitCode.Success;
    } finally {
      d.clear();
    }
  });
}

async function memberUpdate(inv: Invocation, io: Io): Promise<number> {
  const [id, urls] = inv.args;
  if (inv.args.length !== 2 || id === undefined || urls === undefined) {
    throw new CliExit(
      ExitCode.BadArgs,
      "Provide an ID and a list of comma separated peerURL (0xabcd http://example.com,http://example1.com)\n",
    );
  }
  return withContext(inv, io, { sync: true }, async (ctx) => {
    await ctx.timed("Updating member", (signal) => updateMember(ctx.cluster, id, urls.split(","), { signal })).catch(
      (err: unknown) => {
        throw bare(err);
      },
    );
    io.stdout(`Updated member with ID ${id} in cluster\n`);
    return ExitCode.Success;
  });
}

/** Go's url.Error text for a network failure: `Get "<url>": <cause>`. */
function healthFailure(url: string, err: unknown): string {
  return err instanceof NetworkError ? `Get "${url.replace(/\/$/, "")}/health": ${err.message}` : errorText(err);
}

async function clusterHealth(inv: Invocation, io: Io): Promise<number> {
  const forever = inv.flags["forever"] === true;
  if (forever) process.on("SIGINT", () => process.exit(ExitCode.Success));
  return withContext(inv, io, { sync: false }, async (ctx) => {
    let list: V2MemberJSON[];
    try {
      // etcdctl lists members without a deadline here; ours is the total timeout.
      list = await ctx.timed("Listing members", (signal) => members(ctx, signal));
    } catch (err) {
      io.stdout("cluster may be unhealthy: failed to list members\n");
      throw fail(ExitCode.ServerError, err);
    }
    for (;;) {
      let healthy = 0;
      for (const m of list) {
        if (m.clientURLs.length === 0) {
          io.stdout(`member ${m.id} is unreachable: no available published client urls\n`);
          continue;
        }
        let checked = false;
        for (const url of m.clientURLs) {
          const d = deadline(inv.globals.totalTimeoutMs);
          try {
            const h = await getHealth(ctx.cluster.transport, url, { signal: d.signal });
            checked = true;
            if (h.healthy) {
              io.stdout(`member ${m.id} is healthy: got healthy result from ${url}\n`);
              healthy++;
            } else {
              io.stdout(`member ${m.id} is unhealthy: got unhealthy result from ${url}\n`);
            }
            break;
          } catch (err) {
            io.stdout(`failed to check the health of member ${m.id} on ${url}: ${healthFailure(url, err)}\n`);
          } finally {
            d.clear();
          }
        }
        if (!checked) io.stdout(`member ${m.id} is unreachable: [${m.clientURLs.join(" ")}] are all unreachable\n`);
      }
      io.stdout(healthy === list.length ? "cluster is healthy\n" : healthy === 0 ? "cluster is unavailable\n" : "cluster is degraded\n");
      if (!forever) return healthy === list.length ? ExitCode.Success : ExitCode.ClusterNotHealthy;
      io.stdout("\nnext check after 10 second...\n\n");
      await sleep(10_000);
    }
  });
}
