// stats store|self|leader: the member's statistics document, pretty-printed. No cluster
// sync: `self` and `leader` describe the member asked, so ask the endpoint given.

import { getStats, statsKinds, type StatsKind } from "../../client/stats.ts";
import { CliExit, ExitCode } from "../exit-codes.ts";
import { fail, withContext, type Io } from "../context.ts";
import type { Invocation } from "../invocation.ts";
import { formatPrettyJson } from "../output.ts";

function isKind(s: string | undefined): s is StatsKind {
  return (statsKinds as readonly string[]).includes(s ?? "");
}

export async function run(inv: Invocation, io: Io): Promise<number> {
  const kind = inv.args[0];
  if (!isKind(kind)) throw fail(ExitCode.BadArgs, new Error("stats kind required: store, self or leader"));
  return withContext(inv, io, { sync: false }, async (ctx) => {
    try {
      const doc = await ctx.timed(`Reading ${kind} stats`, (signal) => getStats(ctx.cluster, kind, { signal }));
      io.stdout(formatPrettyJson(doc));
      return ExitCode.Success;
    } catch (err) {
      if (err instanceof CliExit) throw err;
      throw fail(ExitCode.ServerError, err);
    }
  });
}
