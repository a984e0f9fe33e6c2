// v3 alarm list|disarm and defrag (alarm_command.go, defrag_command.go) over the
// gateway's /v3/maintenance/alarm and /v3/maintenance/defragment.
//
// disarm is clientv3's AlarmDisarm with an empty member: list the alarms, deactivate each
// one by one, print what the server says it deactivated. defrag asks each endpoint alone
// (or, with --cluster, each member's client URLs), because defragmentation is per member:
// a client that moved on to another endpoint would defragment the wrong database.

import { CliExit } from "../../exit-codes.ts";
import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { createV3Context, printOut, v3ErrorText, v3Fail, V3Exit, withV3Context, type V3Context } from "./context.ts";
import { endpointsFromCluster } from "./cluster-endpoints.ts";
import { alarmNumber, printAlarms, type WireAlarmResponse } from "./printers-maintenance.ts";

const alarmList = (ctx: V3Context): Promise<WireAlarmResponse> =>
  ctx.request((signal) => ctx.client.call<WireAlarmResponse>("/v3/maintenance/alarm", { action: "GET" }, { signal }));

async function alarmDisarm(ctx: V3Context): Promise<WireAlarmResponse> {
  const listed = await alarmList(ctx);
  const alarms = [];
  for (const a of listed.alarms ?? []) {
    const body = { action: "DEACTIVATE", memberID: String(a.memberID ?? "0"), alarm: alarmNumber(a) };
    const r = await ctx.request((signal) => ctx.client.call<WireAlarmResponse>("/v3/maintenance/alarm", body, { signal }));
    alarms.push(...(r.alarms ?? []));
  }
  // clientv3 builds this response itself: no header.
  return alarms.length === 0 ? {} : { alarms };
}

async function defrag(inv: V3Invocation, io: Io): Promise<number> {
  // etcdctl opens an etcd data dir's bbolt file offline; a kvctl data dir's LMDB file is
  // compacted by its member (POST /v3/maintenance/defragment), which holds it open.
  if (typeof inv.flags["data-dir"] === "string" && inv.flags["data-dir"] !== "") {
    throw v3Fail(V3Exit.BadFeature, "defrag --data-dir is not supported: a kvctl data dir is defragmented by its running member (kvctl v3 defrag --endpoints <its client URL>)");
  }
  let failures = 0;
  for (const ep of await endpointsFromCluster(inv, io)) {
    const ctx = await createV3Context({ ...inv, globals: { ...inv.globals, endpoints: [ep] } }, io);
    try {
      await ctx.request((signal) => ctx.client.call("/v3/maintenance/defragment", {}, { signal }));
      io.stdout(`Finished defragmenting etcd member[${ep}]\n`);
    } catch (err) {
      // ctx.request turned the failure into etcdctl's `Error: …` line; defrag words it its own way.
      const text = err instanceof CliExit ? err.stderr.replace(/^Error: /, "").trimEnd() : v3ErrorText(err);
      io.stderr(`Failed to defragment etcd member[${ep}] (${text})\n`);
      failures++;
    } finally {
      ctx.close();
    }
  }
  return failures === 0 ? V3Exit.Success : V3Exit.Error;
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  if (inv.path[0] === "defrag") return defrag(inv, io);
  const sub = inv.path[1] ?? "";
  if (inv.args.length !== 0) throw v3Fail(V3Exit.BadArgs, `alarm ${sub} command accepts no arguments`);
  return withV3Context(inv, io, async (ctx) => {
    const r = sub === "disarm" ? await alarmDisarm(ctx) : await alarmList(ctx);
    printOut(io, () => printAlarms(r, ctx.print));
    return V3Exit.Success;
  });
}
