// v3 txn: the transaction from --file, or stdin (etcdctl's line format, or the gateway's
// JSON TxnRequest; see txn-parse.ts), committed with POST /v3/kv/txn and printed as
// etcdctl prints it. Prompts ("compares:" …) go to stdout with -i, as etcdctl's, and also
// when stdin is a terminal, where the lines are read one by one.

import { readFileSync } from "node:fs";
import type { WireTxnRequest, WireTxnResponse } from "../../../client/v3-types.ts";
import type { Io } from "../../io.ts";
import { readAllStdin } from "../../tty.ts";
import type { V3Invocation } from "./argv.ts";
import { printOut, v3Fail, V3Exit, withV3Context } from "./context.ts";
import { printTxn } from "./printers.ts";
import { linesOf, looksLikeJson, parseJsonTxn, readLineTxn, TxnInputError, type NextLine } from "./txn-parse.ts";

/** Lines typed on a terminal, read as they come. */
async function terminalLines(): Promise<{ next: NextLine; close(): void }> {
  const { createInterface } = await import("node:readline");
  const rl = createInterface({ input: process.stdin, terminal: false });
  const it = rl[Symbol.asyncIterator]();
  return {
    next: async () => {
      const r = await it.next();
      return r.done === true ? undefined : r.value;
    },
    close: () => rl.close(),
  };
}

async function readTxn(inv: V3Invocation, io: Io): Promise<WireTxnRequest> {
  const file = typeof inv.flags["file"] === "string" ? inv.flags["file"] : "";
  const interactive = inv.flags["interactive"] === true;
  const prompt = (text: string): void => {
    if (interactive || process.stdin.isTTY === true) io.stdout(`${text}\n`);
  };
  if (file !== "" && file !== "-") {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw v3Fail(V3Exit.IO, err instanceof Error ? err.message : String(err));
    }
    return looksLikeJson(text) ? parseJsonTxn(text) : readLineTxn(linesOf(text), () => {});
  }
  if (process.stdin.isTTY === true && file === "") {
    const lines = await terminalLines();
    try {
      return await readLineTxn(lines.next, prompt);
    } finally {
      lines.close();
    }
  }
  const text = await readAllStdin();
  if (looksLikeJson(text)) return parseJsonTxn(text);
  return readLineTxn(linesOf(text), prompt);
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  if (inv.args.length !== 0) throw v3Fail(V3Exit.BadArgs, "txn command does not accept argument");
  return withV3Context(inv, io, async (ctx) => {
    let req: WireTxnRequest;
    try {
      req = await readTxn(inv, io);
    } catch (err) {
      if (err instanceof TxnInputError) throw v3Fail(err.exitCode, err.message);
      throw err;
    }
    const r = await ctx.request((signal) => ctx.client.call<WireTxnResponse>("/v3/kv/txn", req, { signal }));
    printOut(io, () => printTxn(r, ctx.print));
    return V3Exit.Success;
  });
}
