// v3 endpoint health|status|hashkv (ep_command.go). Each endpoint (--endpoints, or with
// --cluster every member's client URLs) is asked alone, with a client of its own, so that
// each row describes the endpoint named in it.
//
// health: a linearizable range of the key "health" per endpoint, all at once; permission
// denied counts as healthy (the read went through consensus). Rows in the order the
// answers came, as etcdctl's goroutines deliver them. status: /v3/maintenance/status, one
// endpoint after another. hashkv: etcd 3.4's gateway has no HashKV route (its pattern is
// shadowed by maintenance/hash), nor has kvctl's, so it is refused before any request.

import { V3Error } from "../../../api/v3-errors.ts";
import { deadline } from "../../context.ts";
import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { endpointsFromCluster } from "./cluster-endpoints.ts";
import { createV3Context, printOut, tlsOf, v3ErrorText, v3Fail, V3Exit } from "./context.ts";
import { goDuration, healthLines, printHashKV, printHealth, printStatus, type EndpointHashKVRow, type EndpointHealth, type EndpointStatusRow, type WireStatusResponse } from "./printers-cluster.ts";

const one = (inv: V3Invocation, ep: string): V3Invocation => ({ ...inv, globals: { ...inv.globals, endpoints: [ep] } });

async function checkHealth(inv: V3Invocation, io: Io, ep: string): Promise<EndpointHealth> {
  let ctx;
  try {
    ctx = await createV3Context(one(inv, ep), io);
  } catch (err) {
    return { ep, health: false, took: "", error: v3ErrorText(err) };
  }
  const start = process.hrtime.bigint();
  const d = deadline(inv.globals.commandTimeoutMs);
  try {
    await ctx.client.call("/v3/kv/range", { key: Buffer.from("health").toString("base64") }, { signal: d.signal });
    return { ep, health: true, took: goDuration(process.hrtime.bigint() - start), error: "" };
  } catch (err) {
    const took = goDuration(process.hrtime.bigint() - start);
    if (err instanceof V3Error && err.message === "etcdserver: permission denied") return { ep, health: true, took, error: "" };
    return { ep, health: false, took, error: v3ErrorText(err) };
  } finally {
    d.clear();
    ctx.close();
  }
}

async function health(inv: V3Invocation, io: Io): Promise<number> {
  const results: EndpointHealth[] = [];
  await Promise.all((await endpointsFromCluster(inv, io)).map(async (ep) => results.push(await checkHealth(inv, io, ep))));
  const print = { format: inv.globals.writeOut, hex: inv.globals.hex };
  if (print.format === "simple") io.stderr(healthLines(results));
  else printOut(io, () => printHealth(results, print));
  if (results.some((h) => h.error !== "")) throw v3Fail(V3Exit.Error, "unhealthy cluster");
  return V3Exit.Success;
}

async function status(inv: V3Invocation, io: Io): Promise<number> {
  const rows: EndpointStatusRow[] = [];
  let failed = false;
  for (const ep of await endpointsFromCluster(inv, io)) {
    const ctx = await createV3Context(one(inv, ep), io);
    const d = deadline(inv.globals.commandTimeoutMs);
    try {
      rows.push({ ep, resp: await ctx.client.call<WireStatusResponse>("/v3/maintenance/status", {}, { signal: d.signal }) });
    } catch (err) {
      failed = true;
      io.stderr(`Failed to get the status of endpoint ${ep} (${v3ErrorText(err)})\n`);
    } finally {
      d.clear();
      ctx.close();
    }
  }
  printOut(io, () => printStatus(rows, { format: inv.globals.writeOut, hex: inv.globals.hex }));
  // etcdctl exits 1 here without an `Error:` line: each failure was named above.
  return failed ? V3Exit.Error : V3Exit.Success;
}

async function hashkv(inv: V3Invocation, io: Io): Promise<number> {
  const rev = inv.flags["rev"];
  const revision = typeof rev === "number" ? rev : 0;
  const g = inv.globals;
  const tls = tlsOf(g);
  const endpoints = await endpointsFromCluster(inv, io);
  const rows: EndpointHashKVRow[] = [];
  let last: string | undefined;
  const ctx = await createV3Context(inv, io);
  try {
    // etcdctl logs in once, at dial time; a refused login ends the command (exit 2).
    const token = inv.globals.user === undefined ? "" : await ctx.request((signal) => ctx.client.authToken({ signal }));
    const { hashKV } = await import("../../../client/v3-grpc.ts");
    for (const ep of endpoints) {
      const d = deadline(g.commandTimeoutMs);
      try {
        rows.push({ ep, resp: await hashKV(ep, revision, { tls, token, signal: d.signal, connectTimeoutMs: g.dialTimeoutMs }) });
      } catch (err) {
        last = v3ErrorText(err);
        io.stderr(`Failed to get the hash of endpoint ${ep} (${last})\n`);
      } finally {
        d.clear();
      }
    }
  } finally {
    ctx.close();
  }
  printOut(io, () => printHashKV(rows, { format: g.writeOut, hex: g.hex }));
  if (last !== undefined) throw v3Fail(V3Exit.Error, last);
  return V3Exit.Success;
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  switch (inv.path[1]) {
    case "health":
      return health(inv, io);
    case "status":
      return status(inv, io);
    default:
      return hashkv(inv, io);
  }
}
