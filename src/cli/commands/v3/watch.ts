// v3 watch: one gateway watch stream (POST /v3/watch) per watched range, printed per
// response as etcdctl prints it ("PUT\nkey\nvalue"), until the server cancels it
// (`watch was canceled (…)`, then exit 5 as etcdctl). `watch key -- cmd args` runs the
// command for every event with ETCD_WATCH_* set; `-i` reads `watch …` lines from stdin.

import { spawnSync } from "node:child_process";
import type { WireWatchResponse } from "../../../client/v3-types.ts";
import { b64, unb64, wireNumber } from "../../../client/v3-types.ts";
import { CliExit } from "../../exit-codes.ts";
import type { Io } from "../../io.ts";
import { parseV3Argv, type V3Invocation } from "./argv.ts";
import { printOut, v3ErrorText, v3Fail, V3Exit, withV3Context, type V3Context } from "./context.ts";
import { goQuote } from "./go-format.ts";
import { printWatch } from "./printers.ts";
import { prefixRangeEnd } from "./printers-admin.ts";
import { argify } from "./txn-parse.ts";

export interface WatchTarget {
  key: string;
  rangeEnd: string | undefined;
  prefix: boolean;
  rev: number;
  prevKv: boolean;
  exec: string[];
}

const envWatch = (env: NodeJS.ProcessEnv, name: string): string => env[`KV_${name}`] ?? env[`ETCDCTL_${name}`] ?? "";

/** etcdctl's parseWatchArgs + getWatchChan checks, for a non-interactive watch. */
export function watchTarget(inv: V3Invocation, env: NodeJS.ProcessEnv): WatchTarget {
  const envKey = envWatch(env, "WATCH_KEY");
  const envRange = envWatch(env, "WATCH_RANGE_END");
  if (envKey === "" && envRange !== "") throw v3Fail(V3Exit.BadArgs, `ETCDCTL_WATCH_KEY is empty but got ETCDCTL_WATCH_RANGE_END=${JSON.stringify(envRange)}`);
  const exec = inv.afterDash ?? [];
  if (inv.afterDash !== undefined && exec.length === 0) throw v3Fail(V3Exit.BadArgs, "bad number of arguments (found separator --, but no commands)");
  let args = inv.args.slice(0, inv.args.length - exec.length);
  if (envKey !== "") {
    if (args.length > 0) throw v3Fail(V3Exit.BadArgs, "bad number of arguments (found conflicting environment key)");
    args = envRange !== "" ? [envKey, envRange] : [envKey];
  }
  if (args.length < 1 || args.length > 2) throw v3Fail(V3Exit.BadArgs, "bad number of arguments");
  const prefix = inv.flags["prefix"] === true;
  if (args.length === 2 && prefix) throw v3Fail(V3Exit.BadArgs, "`range_end` and `--prefix` are mutually exclusive");
  return {
    key: args[0] ?? "",
    rangeEnd: args[1],
    prefix,
    rev: typeof inv.flags["rev"] === "number" ? inv.flags["rev"] : 0,
    prevKv: inv.flags["prev-kv"] === true,
    exec,
  };
}

/** The gateway's WatchCreateRequest for a target. */
export function createRequest(t: WatchTarget): { create_request: Record<string, unknown> } {
  const req: Record<string, unknown> = { key: b64(t.key) };
  if (t.rangeEnd !== undefined) req["range_end"] = b64(t.rangeEnd);
  else if (t.prefix) req["range_end"] = t.key === "" ? b64("\x00") : prefixRangeEnd(Buffer.from(t.key, "utf8")).toString("base64");
  if (t.key === "" && t.prefix) req["key"] = b64("\x00");
  if (t.rev > 0) req["start_revision"] = t.rev;
  if (t.prevKv) req["prev_kv"] = true;
  return { create_request: req };
}

/** clientv3's WatchResponse.Err() text for a canceled watch. */
function cancelText(r: WireWatchResponse): string {
  if (wireNumber(r.compact_revision) !== 0) return "etcdserver: mvcc: required revision has been compacted";
  if (r.cancel_reason !== undefined && r.cancel_reason !== "") return r.cancel_reason;
  return "etcdserver: mvcc: required revision is a future revision";
}

function runExec(exec: readonly string[], r: WireWatchResponse): void {
  for (const ev of r.events ?? []) {
    const type = ev.type === "DELETE" || ev.type === 1 ? "DELETE" : "PUT";
    const res = spawnSync(exec[0] ?? "", exec.slice(1), {
      stdio: "inherit",
      env: {
        ...process.env,
        ETCD_WATCH_REVISION: String(wireNumber(r.header?.revision)),
        ETCD_WATCH_EVENT_TYPE: `"${type}"`,
        ETCD_WATCH_KEY: goQuote(unb64(ev.kv?.key)),
        ETCD_WATCH_VALUE: goQuote(unb64(ev.kv?.value)),
      },
    });
    if (res.error !== undefined || res.status !== 0) {
      const why = res.error?.message ?? (res.status === null ? `signal: ${res.signal ?? ""}` : `exit status ${res.status}`);
      throw new CliExit(V3Exit.Error, `command ${JSON.stringify(exec).replace(/,/g, " ")} error (${why})\n`);
    }
  }
}

/** Streams one watch until the server cancels or ends it; resolves with the cancel text. */
async function watchOne(ctx: V3Context, t: WatchTarget, stop?: AbortSignal): Promise<string | undefined> {
  let canceled: string | undefined;
  const print = (r: WireWatchResponse): void => printOut(ctx.io, () => printWatch(r, ctx.print));
  const controller = new AbortController();
  stop?.addEventListener("abort", () => controller.abort(), { once: true });
  let failure: unknown;
  try {
    await ctx.client.stream(
      "/v3/watch",
      createRequest(t),
      (result) => {
        if (failure !== undefined || canceled !== undefined) return;
        try {
          const r = result as WireWatchResponse;
          const events = r.events ?? [];
          if (r.created === true && events.length === 0) return;
          if (r.canceled === true) {
            canceled = cancelText(r);
            ctx.io.stderr(`watch was canceled (${canceled})\n`);
            print(r);
            controller.abort();
            return;
          }
          if (events.length === 0 && wireNumber(r.compact_revision) === 0 && wireNumber(r.header?.revision) !== 0) {
            ctx.io.stdout(`progress notify: ${wireNumber(r.header?.revision)}\n`);
          }
          print(r);
          if (t.exec.length > 0) runExec(t.exec, r);
        } catch (err) {
          failure = err;
          controller.abort();
        }
      },
      { signal: controller.signal, connectTimeoutMs: ctx.inv.globals.dialTimeoutMs },
    );
  } catch (err) {
    if (err instanceof CliExit) throw err;
    throw v3Fail(V3Exit.Error, v3ErrorText(err));
  }
  if (failure !== undefined) throw failure;
  return canceled ?? "ended";
}

async function interactive(ctx: V3Context, io: Io): Promise<number> {
  // etcdctl reads stdin a line at a time and starts each watch as its line arrives; at the
  // end of input it exits at once (exit 3), cutting the watches started before.
  const { createInterface } = await import("node:readline");
  const it = createInterface({ input: process.stdin, terminal: false })[Symbol.asyncIterator]();
  const nextLine = async (): Promise<string | undefined> => {
    const r = await it.next();
    return r.done === true ? undefined : r.value;
  };
  const stop = new AbortController();
  for (;;) {
    const line = await nextLine();
    if (line === undefined) {
      stop.abort();
      throw v3Fail(V3Exit.InvalidInput, "Error reading watch request line: EOF");
    }
    const words = argify(line);
    if (words.length < 1) {
      io.stderr(`Invalid command: ${line} (watch and progress supported)\n`);
      continue;
    }
    // etcdctl asks the server for a progress notification on its one watch stream; kvctl
    // runs a stream per watch and takes the request without sending one.
    if (words[0] === "progress") continue;
    if (words[0] !== "watch") {
      io.stderr(`Invalid command ${line} (only support watch)\n`);
      continue;
    }
    if (words.length < 2) {
      io.stderr(`Invalid command ${line} (command type or key is not provided)\n`);
      continue;
    }
    let t: WatchTarget;
    try {
      const inv = parseV3Argv(words, {});
      // etcdctl's getWatchChan: a range end only when exactly two arguments, more are ignored.
      const args = inv.args.length > 2 ? inv.args.slice(0, 1) : inv.args;
      t = watchTarget({ ...inv, args }, {});
    } catch (err) {
      io.stderr(`Invalid command ${line} (${err instanceof CliExit ? err.stderr.replace(/^Error: |\n$/g, "") : String(err)})\n`);
      continue;
    }
    void watchOne(ctx, t, stop.signal).catch((err: unknown) => io.stderr(`${err instanceof CliExit ? err.stderr : String(err)}`));
  }
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  if (inv.flags["interactive"] === true) return withV3Context(inv, io, (ctx) => interactive(ctx, io));
  const t = watchTarget(inv, process.env);
  return withV3Context(inv, io, async (ctx) => {
    await watchOne(ctx, t);
    throw v3Fail(V3Exit.Interrupted, "watch is canceled by the server");
  });
}
