// etcdctl's endpointsFromCluster (ep_command.go), shared by defrag and endpoint: the
// --endpoints list, or with --cluster every member's client URLs from a member list.

import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { createV3Context } from "./context.ts";
import type { WireMembersResponse } from "./printers-cluster.ts";

export async function endpointsFromCluster(inv: V3Invocation, io: Io): Promise<string[]> {
  if (inv.flags["cluster"] !== true) return inv.globals.endpoints;
  // MemberList needs no authentication: etcdctl does not ask for a password here.
  const noAuth: V3Invocation = { ...inv, globals: { ...inv.globals, user: undefined, password: undefined } };
  const ctx = await createV3Context(noAuth, io);
  try {
    const r = await ctx.request((signal) => ctx.client.call<WireMembersResponse>("/v3/cluster/member/list", {}, { signal }), {
      wrap: (m) => `failed to fetch endpoints from etcd cluster member list: ${m}`,
    });
    return (r.members ?? []).flatMap((m) => m.clientURLs ?? []);
  } finally {
    ctx.close();
  }
}
