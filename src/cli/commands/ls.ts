// ls: etcdctl's listing when piped (byte for byte); on a terminal with colour on,
// directories are coloured and `ls -r` is drawn as a tree.

import { createV2KeysApi } from "../../client/v2-keys.ts";
import { CliExit, ExitCode } from "../exit-codes.ts";
import { fail, withContext, type Io } from "../context.ts";
import type { Invocation } from "../invocation.ts";
import { formatLs, formatLsTree } from "../output.ts";
import { colourEnabled, loadPaint } from "../tty.ts";

export async function run(inv: Invocation, io: Io, opts: { tty?: boolean } = {}): Promise<number> {
  const key = inv.args[0] ?? "/";
  const recursive = inv.flags["recursive"] === true;
  const slash = inv.flags["p"] === true;
  return withContext(inv, io, { sync: true }, async (ctx) => {
    const keys = createV2KeysApi(ctx.cluster);
    let result;
    try {
      result = await ctx.timed(`Listing ${key}`, (signal) =>
        keys.get(key, {
          recursive,
          sorted: inv.flags["sort"] === true,
          quorum: inv.flags["quorum"] === true,
          signal,
        }),
      );
    } catch (err) {
      if (err instanceof CliExit) throw err;
      throw fail(ExitCode.ServerError, err);
    }
    const format = inv.globals.output;
    const colour =
      format === "simple" &&
      colourEnabled({ noColor: inv.globals.noColor, stream: { isTTY: opts.tty ?? process.stdout.isTTY } });
    if (!colour) {
      const out = formatLs(result, { format, slash });
      if (out.stdout !== "") io.stdout(out.stdout);
      if (out.stderr !== "") io.stderr(out.stderr);
      return ExitCode.Success;
    }
    const paint = await loadPaint();
    io.stdout(
      recursive && result.response.node.dir === true
        ? formatLsTree(result, { slash, paint })
        : formatLs(result, { format, slash, paint }).stdout,
    );
    return ExitCode.Success;
  });
}
