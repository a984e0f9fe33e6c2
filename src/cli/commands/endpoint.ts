// endpoint status: etcdctl v3's `endpoint status` for a v2 cluster. For each endpoint
// (--endpoints, or with --cluster every member's client URLs) it asks that member alone
// for its id, leadership, Raft term and Raft index, and prints them as v3's
// `-w table` does (or one JSON line with -o json). An endpoint that fails is reported on
// stderr, `Failed to get the status of endpoint <ep> (<error>)`, the others are still
// printed, and the exit is 1 (v3's ExitError).
//
// No cluster sync: each row must describe the endpoint named in it.

import { getEndpointStatus, type EndpointStatus } from "../../client/endpoint-status.ts";
import { listMembers } from "../../client/members.ts";
import { ClusterError } from "../../client/errors.ts";
import { CliExit, ExitCode } from "../exit-codes.ts";
import { errorText, withContext, type Io } from "../context.ts";
import type { Invocation } from "../invocation.ts";

/** A line on stderr and exit 1 (kept here: importing auth.ts would load the auth client). */
const exit1 = (text: string): CliExit => new CliExit(ExitCode.BadArgs, `${text}\n`);

export interface EndpointRow {
  endpoint: string;
  status: EndpointStatus;
}

/**
 * A table as olekukonko/tablewriter draws it for etcdctl: `+---+` rules, headers
 * upper-cased and centred, cells right-aligned, one space of padding.
 */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const rule = `+${widths.map((w) => "-".repeat(w + 2)).join("+")}+\n`;
  const centre = (s: string, w: number): string => {
    const left = Math.floor((w - s.length) / 2);
    return " ".repeat(left) + s + " ".repeat(w - s.length - left);
  };
  const line = (cells: readonly string[]): string => `| ${cells.join(" | ")} |\n`;
  let out = rule + line(header.map((h, i) => centre(h.toUpperCase(), widths[i] ?? 0))) + rule;
  for (const r of rows) out += line(widths.map((w, i) => (r[i] ?? "").padStart(w)));
  // The closing rule is drawn even under a header with no rows.
  return out + rule;
}

export function formatStatusTable(rows: readonly EndpointRow[]): string {
  return formatTable(
    ["endpoint", "ID", "is leader", "raft term", "raft index"],
    rows.map(({ endpoint, status: s }) => [endpoint, s.id, String(s.isLeader), String(s.raftTerm), String(s.raftIndex)]),
  );
}

/** One JSON line, shaped like v3's `[{"Endpoint":…,"Status":{…}}]`. */
export function formatStatusJson(rows: readonly EndpointRow[]): string {
  return `${JSON.stringify(rows.map(({ endpoint, status }) => ({ Endpoint: endpoint, Status: status })))}\n`;
}

const formats: Readonly<Record<string, (rows: readonly EndpointRow[]) => string>> = {
  simple: formatStatusTable,
  extended: formatStatusTable,
  table: formatStatusTable,
  json: formatStatusJson,
};

/** A failure of one endpoint without the "cluster is unavailable" wrapper of a one-endpoint client. */
function endpointError(err: unknown): string {
  if (err instanceof ClusterError && err.errors.length === 1 && err.errors[0] !== undefined) return errorText(err.errors[0]);
  return errorText(err);
}

export async function run(inv: Invocation, io: Io): Promise<number> {
  if (inv.subcommand !== "status") throw new CliExit(ExitCode.BadAuth, `No help topic for '${inv.subcommand ?? ""}'\n`);
  if (inv.args.length !== 0) throw exit1("No arguments accepted");
  const print = formats[inv.globals.output];
  if (print === undefined) throw exit1(`Unsupported output format: ${inv.globals.output}`);
  return withContext(inv, io, { sync: false }, async (ctx) => {
    let endpoints = inv.globals.endpoints;
    if (inv.flags["cluster"] === true) {
      try {
        const members = await ctx.timed("Listing members", (signal) => listMembers(ctx.cluster, { signal }));
        endpoints = members.flatMap((m) => m.clientURLs);
      } catch (err) {
        throw exit1(errorText(err));
      }
    }
    const rows: EndpointRow[] = [];
    let failed = false;
    for (const endpoint of endpoints) {
      try {
        ctx.cluster.setEndpoints([endpoint]);
        const status = await ctx.timed(`Reading the status of ${endpoint}`, (signal) => getEndpointStatus(ctx.cluster, { signal }));
        rows.push({ endpoint, status });
      } catch (err) {
        failed = true;
        io.stderr(`Failed to get the status of endpoint ${endpoint} (${endpointError(err)})\n`);
      }
    }
    io.stdout(print(rows));
    return failed ? ExitCode.BadArgs : ExitCode.Success;
  });
}
