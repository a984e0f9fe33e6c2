// v3 lock <lockname> [exec-command arg1 ...] (lock_command.go + concurrency.Mutex):
// a session lease of --ttl seconds, the key <lockname>/<lease hex> put under it if not
// there yet, then a wait until every key under <lockname>/ created before ours is deleted.
// Holding the lock: without a command, print the key (etcdctl's get output) and hold it
// until SIGINT/SIGTERM, then delete it (exit 0), or fail if the session's lease is gone;
// with a command, run it with ETCD_LOCK_KEY and ETCD_LOCK_REV in its environment, then
// delete the key. The lease is left to expire, as etcdctl leaves it.

import { spawn } from "node:child_process";
import { b64, type WireHeader, type WireRangeResponse } from "../../../client/v3-types.ts";
import { CliExit } from "../../exit-codes.ts";
import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { CanceledError, createRevisionIs, interruptedBeforeExpiry, firstCreateRequest, kvOf, newSession, onInterrupt, txn, waitDeletes } from "./concurrency.ts";
import { printOut, v3Fail, V3Exit, withV3Context, type V3Context } from "./context.ts";
import { printGet } from "./printers.ts";

/** concurrency.Mutex.Lock; returns the key and the header of the moment it was acquired. */
async function acquire(ctx: V3Context, pfx: string, lease: string, key: string, signal: AbortSignal): Promise<WireHeader | undefined> {
  const getOwner = { request_range: firstCreateRequest(pfx) };
  const r = await txn(ctx, {
    compare: [createRevisionIs(key, 0)],
    success: [{ request_put: { key: b64(key), value: "", lease } }, getOwner],
    failure: [{ request_range: { key: b64(key) } }, getOwner],
  });
  const myRev = BigInt(r.succeeded === true ? String(r.header?.revision ?? "0") : String(kvOf(r, 0)?.create_revision ?? "0"));
  const owner = kvOf(r, 1);
  if (owner === undefined || BigInt(String(owner.create_revision ?? "0")) === myRev) return r.header;
  try {
    return await waitDeletes(ctx, pfx, myRev - 1n, signal);
  } catch (err) {
    // Lock releases its key when the wait fails (canceled included).
    await ctx.request((s) => ctx.client.call("/v3/kv/deleterange", { key: b64(key) }, { signal: s })).catch(() => undefined);
    throw err;
  }
}

const release = (ctx: V3Context, key: string): Promise<unknown> =>
  ctx.request((s) => ctx.client.call("/v3/kv/deleterange", { key: b64(key) }, { signal: s }));

/** exec.Cmd.Run with stdio passed through; Go's error text when it fails. */
function runCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn(argv[0] ?? "", argv.slice(1), { stdio: "inherit", env });
    child.once("error", (err: NodeJS.ErrnoException) =>
      resolve(err.code === "ENOENT" ? `exec: ${JSON.stringify(argv[0] ?? "")}: executable file not found in $PATH` : err.message),
    );
    child.once("exit", (code, sig) => resolve(sig !== null ? `signal: ${sig === "SIGINT" ? "interrupt" : sig === "SIGTERM" ? "terminated" : sig === "SIGKILL" ? "killed" : sig}` : code === 0 ? undefined : `exit status ${code ?? 1}`));
  });
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  if (inv.args.length === 0) throw v3Fail(V3Exit.BadArgs, "lock takes a lock name argument and an optional command to execute");
  const [name = "", ...command] = inv.args;
  const ttl = Number(inv.flags["ttl"] ?? 10);
  const interrupt = onInterrupt();
  try {
    return await withV3Context(inv, io, async (ctx) => {
      const session = await newSession(ctx, ttl > 0 ? ttl : 60);
      try {
        const pfx = `${name}/`;
        const key = `${pfx}${session.leaseHex}`;
        const hdr = await acquire(ctx, pfx, session.lease, key, interrupt.signal).catch((err: unknown) => {
          if (err instanceof CanceledError) throw v3Fail(V3Exit.Error, err.message);
          throw err;
        });
        if (command.length > 0) {
          const env = { ETCD_LOCK_KEY: key, ETCD_LOCK_REV: String(hdr?.revision ?? "0"), ...process.env };
          const failed = await runCommand(command, env);
          await release(ctx, key);
          if (failed !== undefined) throw v3Fail(V3Exit.Error, failed);
          return V3Exit.Success;
        }
        const got = await ctx.request((s) => ctx.client.call<WireRangeResponse>("/v3/kv/range", { key: b64(key) }, { signal: s }));
        if ((got.kvs ?? []).length === 0) throw v3Fail(V3Exit.Error, "lock lost on init");
        printOut(io, () => printGet(got, ctx.print));
        if (await interruptedBeforeExpiry(interrupt.signal, session)) {
          await release(ctx, key);
          return V3Exit.Success;
        }
        throw v3Fail(V3Exit.Error, "session expired");
      } finally {
        session.close();
      }
    });
  } catch (err) {
    if (err instanceof CliExit) throw err;
    throw v3Fail(V3Exit.Error, err instanceof Error ? err.message : String(err));
  } finally {
    interrupt.dispose();
  }
}
