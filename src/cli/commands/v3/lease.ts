// v3 lease grant|revoke|timetolive|list|keep-alive (lease_command.go): IDs in hex on the
// command line and in simple output, decimal on the wire. keep-alive renews every TTL/3
// (at least every 500 ms, as clientv3) with one gateway keep-alive exchange each, until
// the lease is gone ("lease … expired or revoked.") or the process is stopped.

import type { WireHeaderResponse, WireLeaseGrantResponse, WireLeaseKeepAliveResponse, WireLeaseLeasesResponse, WireLeaseTimeToLiveResponse } from "../../../client/v3-types.ts";
import { wireNumber } from "../../../client/v3-types.ts";
import { V3Error } from "../../../api/v3-errors.ts";
import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { printOut, v3Fail, V3Exit, withV3Context, type V3Context } from "./context.ts";
import { leaseHex, parseDecInt64, parseHexInt64 } from "./go-format.ts";
import { printGrant, printKeepAlive, printLeases, printRevoke, printTimeToLive } from "./printers-admin.ts";

/** etcdctl's leaseFromArgs: a hex int64, as a decimal string for the gateway. */
export function leaseArg(arg: string): string {
  const id = parseHexInt64(arg);
  if (!id.ok) throw v3Fail(V3Exit.BadArgs, `bad lease ID arg (${id.error}), expecting ID in Hex`);
  return id.value;
}


/** One keep-alive exchange: the first message of a /v3/lease/keepalive stream. */
async function keepAliveOnce(ctx: V3Context, id: string, signal: AbortSignal): Promise<WireLeaseKeepAliveResponse> {
  const stop = new AbortController();
  const onAbort = (): void => stop.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  let first: WireLeaseKeepAliveResponse | undefined;
  try {
    await ctx.client.stream(
      "/v3/lease/keepalive",
      { ID: id },
      (result) => {
        if (first === undefined) first = result as WireLeaseKeepAliveResponse;
        stop.abort();
      },
      { signal: stop.signal },
    );
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error("context deadline exceeded");
  if (first === undefined) throw new Error("keep-alive stream ended without an answer");
  return first;
}

const leaseNotFound = (): V3Error => new V3Error(5, "etcdserver: requested lease not found");

async function keepAlive(ctx: V3Context, id: string, once: boolean): Promise<number> {
  if (once) {
    const r = await ctx.request(async (signal) => {
      const res = await keepAliveOnce(ctx, id, signal);
      // clientv3.KeepAliveOnce turns a TTL <= 0 answer into ErrLeaseNotFound.
      if (wireNumber(res.TTL) <= 0) throw leaseNotFound();
      return res;
    }, { code: V3Exit.BadConnection });
    printOut(ctx.io, () => printKeepAlive(r, ctx.print));
    return V3Exit.Success;
  }
  for (;;) {
    const r = await ctx.request((signal) => keepAliveOnce(ctx, id, signal), { code: V3Exit.BadConnection });
    const ttl = wireNumber(r.TTL);
    if (ttl <= 0) break;
    printOut(ctx.io, () => printKeepAlive(r, ctx.print));
    const waitMs = Math.max(500, Math.floor(ttl / 3) * 1000);
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
  if (ctx.print.format === "simple") ctx.io.stdout(`lease ${leaseHex(id)} expired or revoked.\n`);
  return V3Exit.Success;
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  const args = inv.args;
  switch (inv.path[1]) {
    case "grant": {
      if (args.length !== 1) throw v3Fail(V3Exit.BadArgs, "lease grant command needs TTL argument");
      const ttl = parseDecInt64(args[0] ?? "");
      if (!ttl.ok) throw v3Fail(V3Exit.BadArgs, `bad TTL (${ttl.error})`);
      return withV3Context(inv, io, async (ctx) => {
        const r = await ctx.request((signal) => ctx.client.call<WireLeaseGrantResponse>("/v3/lease/grant", { TTL: ttl.value }, { signal }), {
          wrap: (m) => `failed to grant lease (${m})`,
        });
        printOut(io, () => printGrant(r, ctx.print));
        return V3Exit.Success;
      });
    }
    case "revoke": {
      if (args.length !== 1) throw v3Fail(V3Exit.BadArgs, "lease revoke command needs 1 argument");
      const id = leaseArg(args[0] ?? "");
      return withV3Context(inv, io, async (ctx) => {
        const r = await ctx.request((signal) => ctx.client.call<WireHeaderResponse>("/v3/lease/revoke", { ID: id }, { signal }), {
          wrap: (m) => `failed to revoke lease (${m})`,
        });
        printOut(io, () => printRevoke(id, r, ctx.print));
        return V3Exit.Success;
      });
    }
    case "timetolive": {
      if (args.length !== 1) throw v3Fail(V3Exit.BadArgs, "lease timetolive command needs lease ID as argument");
      const id = leaseArg(args[0] ?? "");
      const keys = inv.flags["keys"] === true;
      return withV3Context(inv, io, async (ctx) => {
        const body = keys ? { ID: id, keys: true } : { ID: id };
        const r = await ctx.request((signal) => ctx.client.call<WireLeaseTimeToLiveResponse>("/v3/lease/timetolive", body, { signal }), {
          code: V3Exit.BadConnection,
        });
        printOut(io, () => printTimeToLive(r, keys, ctx.print));
        return V3Exit.Success;
      });
    }
    case "list":
      return withV3Context(inv, io, async (ctx) => {
        const r = await ctx.request((signal) => ctx.client.call<WireLeaseLeasesResponse>("/v3/lease/leases", {}, { signal }), {
          code: V3Exit.BadConnection,
        });
        printOut(io, () => printLeases(r, ctx.print));
        return V3Exit.Success;
      });
    case "keep-alive": {
      if (args.length !== 1) throw v3Fail(V3Exit.BadArgs, "lease keep-alive command needs lease ID as argument");
      const id = leaseArg(args[0] ?? "");
      return withV3Context(inv, io, (ctx) => keepAlive(ctx, id, inv.flags["once"] === true));
    }
    default:
      throw v3Fail(V3Exit.Error, `unknown command "${inv.path.join(" ")}"`);
  }
}
