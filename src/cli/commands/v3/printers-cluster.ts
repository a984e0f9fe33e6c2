// etcdctl v3's printers for `member …`, `endpoint …` and `move-leader` (printer.go's
// make*Table, printer_simple.go, printer_fields.go, printer_json.go, printer_table.go), and
// Go's time.Duration String for endpoint health's `took`. Pure functions. Member and
// status IDs come from the gateway as decimal strings and reach the text through BigInt.

import type { WireHeader, WireInt } from "../../../client/v3-types.ts";
import { formatTable } from "../endpoint.ts";
import { goJsonString, goQuote } from "./go-format.ts";
import { fieldsHeader, jsonHeader, jsonInt, jsonObject, n, render, UnsupportedFormatError, type PrintOptions, type Printed } from "./printers.ts";
import { protobufHeaderOnly, protobufMembers } from "./printers-protobuf.ts";
import { humanizeBytes } from "./printers-maintenance.ts";

export interface WireMember {
  ID?: WireInt;
  name?: string;
  peerURLs?: string[];
  clientURLs?: string[];
  isLearner?: boolean;
}

export interface WireMembersResponse {
  header?: WireHeader;
  /** member add only: the new member. */
  member?: WireMember;
  members?: WireMember[];
}

export interface WireStatusResponse {
  header?: WireHeader;
  version?: string;
  dbSize?: WireInt;
  leader?: WireInt;
  raftIndex?: WireInt;
  raftTerm?: WireInt;
  raftAppliedIndex?: WireInt;
  errors?: string[];
  dbSizeInUse?: WireInt;
  isLearner?: boolean;
}

export interface EndpointHealth {
  ep: string;
  health: boolean;
  /** Go's Duration String; "" when no request was made. */
  took: string;
  error: string;
}

export interface EndpointStatusRow {
  ep: string;
  resp: WireStatusResponse;
}

/** fmt's %x of a uint64 given as decimal digits. */
export const hexId = (v: WireInt | undefined): string => BigInt(n(v)).toString(16);

/** fmt's %16x: hex, left-padded with spaces to 16. */
const hexId16 = (v: WireInt | undefined): string => hexId(v).padStart(16, " ");

const goStrings = (xs: readonly string[]): string => `[${xs.map(goJsonString).join(",")}]`;
const jsonStrings = (xs: readonly string[] | undefined): string | undefined => (xs === undefined || xs.length === 0 ? undefined : goStrings(xs));

export function jsonMember(m: WireMember): string {
  return jsonObject([
    ["ID", jsonInt(m.ID)],
    ["name", m.name === undefined || m.name === "" ? undefined : goJsonString(m.name)],
    ["peerURLs", jsonStrings(m.peerURLs)],
    ["clientURLs", jsonStrings(m.clientURLs)],
    ["isLearner", m.isLearner === true ? "true" : undefined],
  ]);
}

const jsonMembers = (r: WireMembersResponse): string =>
  jsonObject([
    ["header", jsonHeader(r.header)],
    ["member", r.member === undefined ? undefined : jsonMember(r.member)],
    ["members", r.members === undefined || r.members.length === 0 ? undefined : `[${r.members.map(jsonMember).join(",")}]`],
  ]);

const memberRow = (m: WireMember): string[] => [
  hexId(m.ID),
  m.name === undefined || m.name === "" ? "unstarted" : "started",
  m.name ?? "",
  (m.peerURLs ?? []).join(","),
  (m.clientURLs ?? []).join(","),
  String(m.isLearner === true),
];

const memberHeader = ["ID", "Status", "Name", "Peer Addrs", "Client Addrs", "Is Learner"];

function fieldsMembers(r: WireMembersResponse): string {
  let out = fieldsHeader(r.header);
  for (const m of r.members ?? []) {
    out += `"ID" : ${n(m.ID)}\n"Name" : ${goQuote(Buffer.from(m.name ?? ""))}\n`;
    for (const u of m.peerURLs ?? []) out += `"PeerURL" : ${goQuote(Buffer.from(u))}\n`;
    for (const u of m.clientURLs ?? []) out += `"ClientURL" : ${goQuote(Buffer.from(u))}\n`;
    out += `"IsLearner" : ${m.isLearner === true}\n\n`;
  }
  return out;
}

export function printMemberList(r: WireMembersResponse, o: PrintOptions): Printed {
  if (o.format === "table") return formatTable(memberHeader, (r.members ?? []).map(memberRow));
  return render(r, o, {
    simple: () => (r.members ?? []).map((m) => `${memberRow(m).join(", ")}\n`).join(""),
    json: jsonMembers,
    fields: fieldsMembers,
    protobuf: () => protobufMembers(r, false),
  });
}

/**
 * member add: etcdctl's line, then, in the simple format only, the variables for the new
 * member's configuration (its name given on the command line, as the member has none yet).
 */
export function printMemberAdd(r: WireMembersResponse, name: string, peerUrls: string, o: PrintOptions): Printed {
  return render(r, o, {
    simple: () => {
      const newId = n(r.member?.ID);
      const conf = (r.members ?? []).flatMap((m) => (m.peerURLs ?? []).map((u) => `${n(m.ID) === newId ? name : (m.name ?? "")}=${u}`));
      const q = (s: string): string => goQuote(Buffer.from(s));
      return (
        `Member ${hexId16(r.member?.ID)} added to cluster ${hexId16(r.header?.cluster_id)}\n\n` +
        `ETCD_NAME=${q(name)}\nETCD_INITIAL_CLUSTER=${q(conf.join(","))}\nETCD_INITIAL_ADVERTISE_PEER_URLS=${q(peerUrls)}\n` +
        `ETCD_INITIAL_CLUSTER_STATE="existing"\n`
      );
    },
    json: jsonMembers,
    protobuf: () => protobufMembers(r, true),
  });
}

/** member remove|update|promote: `Member <%16x> <verb> cluster <%16x>`. */
export function printMemberChange(verb: "removed from" | "updated in" | "promoted in", id: string, r: WireMembersResponse, o: PrintOptions): Printed {
  return render(r, o, {
    simple: () => `Member ${hexId16(id)} ${verb} cluster ${hexId16(r.header?.cluster_id)}\n`,
    json: jsonMembers,
    // etcdctl's printer has no MemberPromote for protobuf: "not supported" (after the promotion).
    ...(verb === "promoted in" ? {} : { protobuf: () => protobufMembers(r, false) }),
  });
}

// ---- endpoint health | status | hashkv ------------------------------------------------

const healthRow = (h: EndpointHealth): string[] => [h.ep, String(h.health), h.took, h.error];

/** Simple: one line per endpoint on STDERR (etcdctl's choice); stdout stays empty. */
export function healthLines(hs: readonly EndpointHealth[]): string {
  return hs
    .map((h) =>
      h.error === ""
        ? `${h.ep} is healthy: successfully committed proposal: took = ${h.took}\n`
        : `${h.ep} is unhealthy: failed to commit proposal: ${h.error}\n`,
    )
    .join("");
}

/** The stdout of endpoint health for formats other than simple. */
export function printHealth(hs: readonly EndpointHealth[], o: PrintOptions): string {
  switch (o.format) {
    case "simple":
      return "";
    case "table":
      return formatTable(["endpoint", "health", "took", "error"], hs.map(healthRow));
    case "json":
      return `[${hs
        .map((h) =>
          jsonObject([
            ["endpoint", goJsonString(h.ep)],
            ["health", String(h.health)],
            ["took", goJsonString(h.took)],
            ["error", h.error === "" ? undefined : goJsonString(h.error)],
          ]),
        )
        .join(",")}]\n`;
    case "fields":
      return hs.map((h) => `"Endpoint" : ${goQuote(Buffer.from(h.ep))}\n"Health" : ${h.health}\n"Took" : ${h.took}\n"Error" : ${h.error}\n\n`).join("");
    default:
      throw new UnsupportedFormatError(o.format);
  }
}

const statusRow = ({ ep, resp: s }: EndpointStatusRow): string[] => [
  ep,
  hexId(s.header?.member_id),
  s.version ?? "",
  humanizeBytes(Number(n(s.dbSize))),
  String(n(s.leader) === n(s.header?.member_id)),
  String(s.isLearner === true),
  n(s.raftTerm),
  n(s.raftIndex),
  n(s.raftAppliedIndex),
  (s.errors ?? []).join(", "),
];

const statusHeader = ["endpoint", "ID", "version", "db size", "is leader", "is learner", "raft term", "raft index", "raft applied index", "errors"];

function jsonStatus(s: WireStatusResponse): string {
  return jsonObject([
    ["header", jsonHeader(s.header)],
    ["version", s.version === undefined || s.version === "" ? undefined : goJsonString(s.version)],
    ["dbSize", jsonInt(s.dbSize)],
    ["leader", jsonInt(s.leader)],
    ["raftIndex", jsonInt(s.raftIndex)],
    ["raftTerm", jsonInt(s.raftTerm)],
    ["raftAppliedIndex", jsonInt(s.raftAppliedIndex)],
    ["errors", jsonStrings(s.errors)],
    ["dbSizeInUse", jsonInt(s.dbSizeInUse)],
    ["isLearner", s.isLearner === true ? "true" : undefined],
  ]);
}

export function printStatus(rows: readonly EndpointStatusRow[], o: PrintOptions): string {
  switch (o.format) {
    case "simple":
      return rows.map((r) => `${statusRow(r).join(", ")}\n`).join("");
    case "table":
      return formatTable(statusHeader, rows.map(statusRow));
    case "json":
      return `[${rows.map((r) => `{"Endpoint":${goJsonString(r.ep)},"Status":${jsonStatus(r.resp)}}`).join(",")}]\n`;
    case "fields":
      return rows
        .map(({ ep, resp: s }) =>
          fieldsHeader(s.header) +
          `"Version" : ${goQuote(Buffer.from(s.version ?? ""))}\n"DBSize" : ${n(s.dbSize)}\n"Leader" : ${n(s.leader)}\n` +
          `"IsLearner" : ${s.isLearner === true}\n"RaftIndex" : ${n(s.raftIndex)}\n"RaftTerm" : ${n(s.raftTerm)}\n` +
          `"RaftAppliedIndex" : ${n(s.raftAppliedIndex)}\n"Errors" : [${(s.errors ?? []).join(" ")}]\n"Endpoint" : ${goQuote(Buffer.from(ep))}\n\n`,
        )
        .join("");
    default:
      throw new UnsupportedFormatError(o.format);
  }
}

/** move-leader: `Leadership transferred from <id> to <id>` (types.ID's %x). */
export function printMoveLeader(leader: string, target: string, r: { header?: WireHeader }, o: PrintOptions): Printed {
  return render(r, o, {
    simple: () => `Leadership transferred from ${hexId(leader)} to ${hexId(target)}\n`,
    json: () => jsonObject([["header", jsonHeader(r.header)]]),
    protobuf: protobufHeaderOnly,
  });
}

// ---- Go's time.Duration.String ------------------------------------------------------

/** Digits of v / 10^prec with trailing zeros (and a bare point) removed. */
function fraction(v: bigint, prec: number): string {
  const whole = v / 10n ** BigInt(prec);
  const frac = (v % 10n ** BigInt(prec)).toString().padStart(prec, "0").replace(/0+$/, "");
  return frac === "" ? String(whole) : `${whole}.${frac}`;
}

/** time.Duration(ns).String(): "0s", "850ns", "1.5µs", "17.939299ms", "1.2s", "2m3.5s", "1h0m0s". */
export function goDuration(ns: bigint): string {
  if (ns < 0n) return `-${goDuration(-ns)}`;
  if (ns === 0n) return "0s";
  if (ns < 1000n) return `${ns}ns`;
  if (ns < 1_000_000n) return `${fraction(ns, 3)}µs`;
  if (ns < 1_000_000_000n) return `${fraction(ns, 6)}ms`;
  const h = ns / 3_600_000_000_000n;
  const m = (ns / 60_000_000_000n) % 60n;
  const s = `${fraction(ns % 60_000_000_000n, 9)}s`;
  if (h > 0n) return `${h}h${m}m${s}`;
  if (m > 0n) return `${m}m${s}`;
  return s;
}

// ---- endpoint hashkv ----------------------------------------------------------------

export interface EndpointHashKVRow {
  ep: string;
  resp: { header?: WireHeader; hash?: WireInt; compact_revision?: WireInt };
}

const hashRow = ({ ep, resp }: EndpointHashKVRow): string[] => [ep, n(resp.hash)];

/** endpoint hashkv: `<ep>, <hash>` lines, a right-aligned table, `[{"Endpoint","HashKV"}]` or fields. */
export function printHashKV(rows: readonly EndpointHashKVRow[], o: PrintOptions): string {
  switch (o.format) {
    case "simple":
      return rows.map((r) => `${hashRow(r).join(", ")}\n`).join("");
    case "table":
      return formatTable(["endpoint", "hash"], rows.map(hashRow));
    case "json":
      return `[${rows
        .map(({ ep, resp }) =>
          `{"Endpoint":${goJsonString(ep)},"HashKV":${jsonObject([
            ["header", jsonHeader(resp.header)],
            ["hash", jsonInt(resp.hash)],
            ["compact_revision", jsonInt(resp.compact_revision)],
          ])}}`,
        )
        .join(",")}]\n`;
    case "fields":
      return rows.map(({ ep, resp }) => `${fieldsHeader(resp.header)}"Endpoint" : ${goQuote(Buffer.from(ep))}\n"Hash" : ${n(resp.hash)}\n\n`).join("");
    default:
      throw new UnsupportedFormatError(o.format);
  }
}
