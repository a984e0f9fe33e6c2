// v3 get (alias range), put, del and compaction (alias compact): etcdctl v3's argument
// checks, in its order and with its words (get_command.go, put_command.go, …), the
// request to the gateway, and the chosen printer.

import type { WireDeleteRangeRequest, WireDeleteRangeResponse, WireHeaderResponse, WirePutRequest, WirePutResponse, WireRangeRequest, WireRangeResponse } from "../../../client/v3-types.ts";
import { b64 } from "../../../client/v3-types.ts";
import type { Io } from "../../io.ts";
import { readAllStdin } from "../../tty.ts";
import type { V3FlagValue, V3Invocation } from "./argv.ts";
import { printOut, v3Fail, V3Exit, withV3Context } from "./context.ts";
import { parseDecInt64, parseHexInt64 } from "./go-format.ts";
import { printDel, printGet, printPut } from "./printers.ts";
import { prefixRangeEnd } from "./printers-admin.ts";

type Flags = Readonly<Record<string, V3FlagValue>>;
const bool = (f: Flags, name: string): boolean => f[name] === true;
const str = (f: Flags, name: string): string => {
  const v = f[name];
  return typeof v === "string" ? v : "";
};
const num = (f: Flags, name: string): number => {
  const v = f[name];
  return typeof v === "number" ? v : 0;
};

const bad = (message: string): never => {
  throw v3Fail(V3Exit.BadArgs, message);
};

/** The range a key argument names: [key, end) with etcd's \0 conventions, base64 for the gateway. */
function keyRange(key: string, args: readonly string[], f: Flags): { key: string; range_end?: string } {
  const prefix = bool(f, "prefix");
  const fromKey = bool(f, "from-key");
  if (args.length > 1) {
    if (prefix || fromKey) bad("too many arguments, only accept one argument when `--prefix` or `--from-key` is set");
    return { key: b64(key), range_end: b64(args[1] ?? "") };
  }
  if (key === "" && (prefix || fromKey)) return { key: b64("\x00"), range_end: b64("\x00") };
  if (prefix) return { key: b64(key), range_end: prefixRangeEnd(Buffer.from(key, "utf8")).toString("base64") };
  if (fromKey) return { key: b64(key), range_end: b64("\x00") };
  return { key: b64(key) };
}

const sortOrders = { ASCEND: "ASCEND", DESCEND: "DESCEND", "": undefined } as const;
const sortTargets = { CREATE: "CREATE", KEY: "KEY", MODIFY: "MOD", VALUE: "VALUE", VERSION: "VERSION", "": undefined } as const;

/** etcdctl's getGetOp: the RangeRequest of `get` (also used by txn's `get` lines). */
export function getRequest(args: readonly string[], f: Flags): WireRangeRequest {
  if (args.length === 0) bad("get command needs one argument as key and an optional argument as range_end");
  if (bool(f, "prefix") && bool(f, "from-key")) bad("`--prefix` and `--from-key` cannot be set at the same time, choose one");
  const consistency = str(f, "consistency") || "l";
  if (consistency !== "s" && consistency !== "l") throw v3Fail(V3Exit.BadFeature, `unknown consistency flag "${consistency}"`);
  if (bool(f, "count-only") && bool(f, "keys-only")) bad("`--count-only` and `--keys-only` cannot be set at the same time, choose one");
  const req: WireRangeRequest = keyRange(args[0] ?? "", args, f);
  const order = str(f, "order").toUpperCase();
  if (!(order in sortOrders)) throw v3Fail(V3Exit.BadFeature, `bad sort order ${str(f, "order")}`);
  const target = str(f, "sort-by").toUpperCase();
  if (!(target in sortTargets)) throw v3Fail(V3Exit.BadFeature, `bad sort target ${str(f, "sort-by")}`);
  const sortOrder = sortOrders[order as keyof typeof sortOrders];
  const sortTarget = sortTargets[target as keyof typeof sortTargets];
  if (num(f, "limit") !== 0) req.limit = num(f, "limit");
  if (num(f, "rev") > 0) req.revision = num(f, "rev");
  // clientv3.WithSort drops ASCEND by key (the server's natural order); the server sorts
  // ascending when a target other than KEY comes without an order.
  const byKey = sortTarget === undefined || sortTarget === "KEY";
  if (sortOrder !== undefined && !(byKey && sortOrder === "ASCEND")) req.sort_order = sortOrder;
  if (!byKey) req.sort_target = sortTarget;
  if (consistency === "s") req.serializable = true;
  if (bool(f, "keys-only")) req.keys_only = true;
  if (bool(f, "count-only")) req.count_only = true;
  return req;
}

/** etcdctl's getPutOp; `value` is undefined when it must come from stdin. */
export function putRequest(args: readonly string[], f: Flags, value: string | undefined): WirePutRequest {
  if (args.length === 0) bad("put command needs 1 argument and input from stdin or 2 arguments");
  const ignoreValue = bool(f, "ignore-value");
  if (ignoreValue && args.length > 1) bad("put command needs only 1 argument when 'ignore-value' is set");
  const v = ignoreValue ? "" : (args[1] ?? value);
  if (v === undefined || (!ignoreValue && v === "" && args[1] === undefined)) bad("put command needs 1 argument and input from stdin or 2 arguments");
  const lease = parseHexInt64(str(f, "lease") || "0");
  if (!lease.ok) return bad(`bad lease ID (${lease.error}), expecting ID in Hex`);
  const req: WirePutRequest = { key: b64(args[0] ?? "") };
  if (v !== undefined && v !== "") req.value = b64(v);
  if (lease.value !== "0") req.lease = lease.value;
  if (bool(f, "prev-kv")) req.prev_kv = true;
  if (ignoreValue) req.ignore_value = true;
  if (bool(f, "ignore-lease")) req.ignore_lease = true;
  return req;
}

/** etcdctl's getDelOp. */
export function delRequest(args: readonly string[], f: Flags): WireDeleteRangeRequest {
  if (args.length === 0 || args.length > 2) bad("del command needs one argument as key and an optional argument as range_end");
  if (bool(f, "prefix") && bool(f, "from-key")) bad("`--prefix` and `--from-key` cannot be set at the same time, choose one");
  const req: WireDeleteRangeRequest = keyRange(args[0] ?? "", args, f);
  if (bool(f, "prev-kv")) req.prev_kv = true;
  return req;
}


export async function run(inv: V3Invocation, io: Io): Promise<number> {
  const f = inv.flags;
  switch (inv.path[0]) {
    case "get": {
      const req = getRequest(inv.args, f);
      if (bool(f, "print-value-only") && inv.globals.writeOut !== "simple") bad("print-value-only is only for `--write-out=simple`");
      if (bool(f, "count-only") && inv.globals.writeOut !== "fields") bad("`--count-only` is only for `--write-out=fields`");
      return withV3Context(inv, io, async (ctx) => {
        const r = await ctx.request((signal) => ctx.client.call<WireRangeResponse>("/v3/kv/range", req, { signal }));
        printOut(io, () => printGet(r, { ...ctx.print, valueOnly: bool(f, "print-value-only") }));
        return V3Exit.Success;
      });
    }
    case "put": {
      const needsStdin = inv.args.length === 1 && !bool(f, "ignore-value");
      // etcdctl reads stdin before connecting; a --user prompt then sees an empty stdin.
      const value = needsStdin ? await readAllStdin().catch(() => "") : undefined;
      const req = putRequest(inv.args, f, value);
      return withV3Context(inv, io, async (ctx) => {
        const r = await ctx.request((signal) => ctx.client.call<WirePutResponse>("/v3/kv/put", req, { signal }));
        printOut(io, () => printPut(r, ctx.print));
        return V3Exit.Success;
      });
    }
    case "del": {
      const req = delRequest(inv.args, f);
      return withV3Context(inv, io, async (ctx) => {
        const r = await ctx.request((signal) => ctx.client.call<WireDeleteRangeResponse>("/v3/kv/deleterange", req, { signal }));
        printOut(io, () => printDel(r, ctx.print));
        return V3Exit.Success;
      });
    }
    case "compaction": {
      if (inv.args.length !== 1) bad("compaction command needs 1 argument");
      const rev = parseDecInt64(inv.args[0] ?? "");
      if (!rev.ok) throw v3Fail(V3Exit.Error, rev.error);
      return withV3Context(inv, io, async (ctx) => {
        const body = { revision: rev.value, ...(bool(f, "physical") ? { physical: true } : {}) };
        await ctx.request((signal) => ctx.client.call<WireHeaderResponse>("/v3/kv/compaction", body, { signal }));
        io.stdout(`compacted revision ${rev.value}\n`);
        return V3Exit.Success;
      });
    }
    default:
      throw v3Fail(V3Exit.Error, `unknown command "${inv.path.join(" ")}"`);
  }
}
