// v3 elect <election-name> [proposal] / elect -l <election-name> (elect_command.go +
// concurrency.Election).
// Campaign: a session lease (60 s, concurrency's default), the key <name>/<lease hex> put
// with the proposal if not there yet (a different value is proclaimed), a wait until every
// key under <name>/ created before it is deleted; then print the key (etcdctl's get
// output) and lead until SIGINT/SIGTERM, then resign (delete the key if still ours).
// Observe (-l): print the leader's key/value, each new value it proclaims, and the next
// leader after a deletion, until interrupted. etcdctl's observer also grants a session
// lease it never uses; kvctl does not.

import { b64, type WireKeyValue, type WireRangeResponse, type WireWatchResponse } from "../../../client/v3-types.ts";
import { CliExit } from "../../exit-codes.ts";
import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { CanceledError, createRevisionIs, interruptedBeforeExpiry, firstCreateRequest, kvOf, newSession, onInterrupt, txn, waitDeletes, watchUntil } from "./concurrency.ts";
import { printOut, v3Fail, V3Exit, withV3Context, type V3Context } from "./context.ts";
import { prefixRangeEnd } from "./printers-admin.ts";
import { printGet } from "./printers.ts";

const sessionTtl = 60;

async function campaign(ctx: V3Context, io: Io, name: string, proposal: string, signal: AbortSignal): Promise<number> {
  const session = await newSession(ctx, sessionTtl);
  try {
    const pfx = `${name}/`;
    const key = `${pfx}${session.leaseHex}`;
    const r = await txn(ctx, {
      compare: [createRevisionIs(key, 0)],
      success: [{ request_put: { key: b64(key), value: b64(proposal), lease: session.lease } }],
      failure: [{ request_range: { key: b64(key) } }],
    });
    let leaderRev = BigInt(String(r.header?.revision ?? "0"));
    const resign = async (): Promise<void> => {
      await txn(ctx, { compare: [createRevisionIs(key, leaderRev)], success: [{ request_delete_range: { key: b64(key) } }] });
    };
    if (r.succeeded !== true) {
      const kv = kvOf(r, 0);
      leaderRev = BigInt(String(kv?.create_revision ?? "0"));
      if (Buffer.from(kv?.value ?? "", "base64").toString() !== proposal) {
        const p = await txn(ctx, {
          compare: [createRevisionIs(key, leaderRev)],
          success: [{ request_put: { key: b64(key), value: b64(proposal), lease: session.lease } }],
        });
        if (p.succeeded !== true) throw v3Fail(V3Exit.Error, "election: not leader");
      }
    }
    try {
      await waitDeletes(ctx, pfx, leaderRev - 1n, signal);
    } catch (err) {
      if (err instanceof CanceledError) {
        await resign().catch(() => undefined);
        throw v3Fail(V3Exit.Error, err.message);
      }
      throw err;
    }
    const got = await ctx.request((s) => ctx.client.call<WireRangeResponse>("/v3/kv/range", { key: b64(key) }, { signal: s }));
    printOut(io, () => printGet(got, ctx.print));
    if (!(await interruptedBeforeExpiry(signal, session))) throw v3Fail(V3Exit.Error, "elect: session expired");
    await resign();
    return V3Exit.Success;
  } finally {
    session.close();
  }
}

/** concurrency.Election.observe, printing each GetResponse it would deliver. */
async function observe(ctx: V3Context, io: Io, name: string, signal: AbortSignal): Promise<number> {
  const pfx = `${name}/`;
  const show = (r: WireRangeResponse): void => printOut(io, () => printGet(r, ctx.print));
  try {
    while (!signal.aborted) {
      const first = await ctx.request((s) => ctx.client.call<WireRangeResponse>("/v3/kv/range", firstCreateRequest(pfx), { signal: s }));
      let leader: WireKeyValue | undefined = first.kvs?.[0];
      let rev = BigInt(String(first.header?.revision ?? "0"));
      if (leader === undefined) {
        // No leader yet: the first put under the prefix (a delete would make observe spin).
        const range = { key: b64(pfx), range_end: prefixRangeEnd(Buffer.from(pfx)).toString("base64"), start_revision: rev.toString() };
        await watchUntil(ctx, range, (w) => {
          const put = (w.events ?? []).find((e) => e.type === undefined || e.type === "PUT" || e.type === 0);
          if (put?.kv === undefined) return false;
          leader = put.kv;
          rev = BigInt(String(put.kv.mod_revision ?? "0"));
          show({ header: { ...w.header, revision: rev.toString() }, kvs: [put.kv] });
          return true;
        }, signal);
      } else {
        show({ ...(first.header === undefined ? {} : { header: first.header }), kvs: [leader] });
      }
      const key = (leader as WireKeyValue | undefined)?.key ?? "";
      // The leader's later values until its key is deleted.
      await watchUntil(ctx, { key, start_revision: (rev + 1n).toString() }, (w: WireWatchResponse) => {
        for (const e of w.events ?? []) {
          if (e.type === "DELETE" || e.type === 1) return true;
          if (e.kv !== undefined) show({ ...(w.header === undefined ? {} : { header: w.header }), kvs: [e.kv] });
        }
        return false;
      }, signal);
    }
  } catch (err) {
    if (!(err instanceof CanceledError)) throw v3Fail(V3Exit.Error, "elect: observer lost");
  }
  return V3Exit.Success;
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  const args = inv.args;
  if (args.length !== 1 && args.length !== 2) {
    throw v3Fail(V3Exit.BadArgs, "elect takes one election name argument and an optional proposal argument");
  }
  const listen = inv.flags["listen"] === true;
  if (args.length === 1 && !listen) throw v3Fail(V3Exit.BadArgs, "no proposal argument but -l not set");
  if (args.length === 2 && listen) throw v3Fail(V3Exit.BadArgs, "proposal given but -l is set");
  const interrupt = onInterrupt();
  try {
    return await withV3Context(inv, io, (ctx) =>
      args.length === 1 ? observe(ctx, io, args[0] ?? "", interrupt.signal) : campaign(ctx, io, args[0] ?? "", args[1] ?? "", interrupt.signal),
    );
  } catch (err) {
    if (err instanceof CliExit) throw err;
    throw v3Fail(V3Exit.Error, err instanceof Error ? err.message : String(err));
  } finally {
    interrupt.dispose();
  }
}
