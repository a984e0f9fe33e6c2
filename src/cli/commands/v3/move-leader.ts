// v3 move-leader <transferee-member-id> (move_leader_command.go): find the leader among
// --endpoints by asking each its status (the first that names itself leader), then ask
// that one to transfer leadership (/v3/maintenance/transfer-leadership): only the leader
// can, so the request must not go to whichever endpoint answers first.

import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { createV3Context, printOut, v3Fail, V3Exit } from "./context.ts";
import { parseHexUint64 } from "./go-format.ts";
import { n } from "./printers.ts";
import { printMoveLeader, type WireStatusResponse } from "./printers-cluster.ts";
import type { WireHeader } from "../../../client/v3-types.ts";

/** Go's %v of a []string: `[a b c]`. */
const goList = (xs: readonly string[]): string => `[${xs.join(" ")}]`;

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  if (inv.args.length !== 1) throw v3Fail(V3Exit.BadArgs, "move-leader command needs 1 argument");
  const target = parseHexUint64(inv.args[0] ?? "");
  if (!target.ok) throw v3Fail(V3Exit.BadArgs, target.error);
  for (const ep of inv.globals.endpoints) {
    const ctx = await createV3Context({ ...inv, globals: { ...inv.globals, endpoints: [ep] } }, io);
    try {
      const s = await ctx.request((signal) => ctx.client.call<WireStatusResponse>("/v3/maintenance/status", {}, { signal }));
      if (n(s.header?.member_id) !== n(s.leader)) continue;
      const r = await ctx.request((signal) =>
        ctx.client.call<{ header?: WireHeader }>("/v3/maintenance/transfer-leadership", { targetID: target.value }, { signal }),
      );
      printOut(io, () => printMoveLeader(n(s.leader), target.value, r, ctx.print));
      return V3Exit.Success;
    } finally {
      ctx.close();
    }
  }
  throw v3Fail(V3Exit.BadArgs, `no leader endpoint given at ${goList(inv.globals.endpoints)}`);
}
