// v3 member list|add|remove|update|promote (member_command.go) over the gateway's
// /v3/cluster/member/*. IDs are given and printed in hex, sent as decimal strings.

import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { printOut, v3Fail, V3Exit, withV3Context } from "./context.ts";
import { parseHexUint64 } from "./go-format.ts";
import { peerUrlsError } from "./peer-urls.ts";
import type { PrintOptions, Printed } from "./printers.ts";
import { printMemberAdd, printMemberChange, printMemberList, type WireMembersResponse } from "./printers-cluster.ts";

/** The one hex member ID argument of remove/update/promote, as etcdctl checks it. */
function memberId(args: readonly string[]): string {
  if (args.length !== 1) throw v3Fail(V3Exit.BadArgs, "member ID is not provided");
  const id = parseHexUint64(args[0] ?? "");
  if (!id.ok) throw v3Fail(V3Exit.BadArgs, `bad member ID arg (${id.error}), expecting ID in Hex`);
  return id.value;
}

/** add's argument checks: one name; a URL given as a second argument earns a hint. */
function addName(args: readonly string[]): string {
  if (args.length < 1) throw v3Fail(V3Exit.BadArgs, "member name not provided");
  if (args.length > 1) {
    const hints = args.filter((a) => a.toLowerCase().startsWith("http")).map((a) => `, did you mean --peer-urls=${a}`);
    throw v3Fail(V3Exit.BadArgs, `too many arguments${hints.join("")}`);
  }
  return args[0] ?? "";
}

function peerUrls(inv: V3Invocation): string {
  const urls = String(inv.flags["peer-urls"] ?? "");
  if (urls === "") throw v3Fail(V3Exit.BadArgs, "member peer urls not provided");
  // clientv3 refuses bad URLs before connecting: etcdctl's ExitError with its text.
  const bad = peerUrlsError(urls.split(","));
  if (bad !== undefined) throw v3Fail(V3Exit.Error, bad);
  return urls;
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  const sub = inv.path[1];
  // The request, then the printer (a format the command cannot print fails after it, as in etcdctl).
  const call = (path: string, body: unknown, print: (r: WireMembersResponse, o: PrintOptions) => Printed): Promise<number> =>
    withV3Context(inv, io, async (ctx) => {
      const r = await ctx.request((signal) => ctx.client.call<WireMembersResponse>(path, body, { signal }));
      printOut(io, () => print(r, ctx.print));
      return V3Exit.Success;
    });
  switch (sub) {
    case "add": {
      const name = addName(inv.args);
      const urls = peerUrls(inv);
      const body = { peerURLs: urls.split(","), isLearner: inv.flags["learner"] === true };
      return call("/v3/cluster/member/add", body, (r, o) => printMemberAdd(r, name, urls, o));
    }
    case "remove": {
      const id = memberId(inv.args);
      return call("/v3/cluster/member/remove", { ID: id }, (r, o) => printMemberChange("removed from", id, r, o));
    }
    case "update": {
      const id = memberId(inv.args);
      const urls = peerUrls(inv);
      return call("/v3/cluster/member/update", { ID: id, peerURLs: urls.split(",") }, (r, o) => printMemberChange("updated in", id, r, o));
    }
    case "promote": {
      const id = memberId(inv.args);
      return call("/v3/cluster/member/promote", { ID: id }, (r, o) => printMemberChange("promoted in", id, r, o));
    }
    default:
      return call("/v3/cluster/member/list", {}, printMemberList);
  }
}
