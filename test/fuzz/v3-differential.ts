// Differential fuzzer of the v3 API: a seeded generator of requests, valid and malformed,
// sent in the same order to a real etcd 3.4 and to kvctl, both fresh, through the JSON
// gateway (raw HTTP/1.1 bytes, v2-raw.ts) and over gRPC (node:http2, messages built and
// read with the generated codec, frames and headers bent on purpose), and their answers
// compared after normalisation.
//
//   node --import tsx test/fuzz/v3-differential.ts SEED COUNT   (scripts/fuzz-v3.sh)
//
// One request shape, two wires: the generator writes each call as the gateway's JSON
// (snake_case, int64 as strings or numbers); the gRPC side sends the same call as protobuf
// when the JSON reads as one (else bytes that do not), so both faces answer the same
// collisions. Keys come from a small alphabet so requests collide.
//
// What is normalised is what differs by design: cluster/member ids (opaque symbols),
// raft_term, member names and ports, the status call's sizes and indexes, lease IDs the
// server chose (by rank of first appearance; IDs the generator chose are kept), remaining
// TTLs (within 1 s). Revisions are compared as they are: both servers start at the same
// revision (checked). Leases are long (no lease expires during a run: the run stops
// before the shortest could). Auth is only read (its state is another fuzzer's job):
// enabling it would refuse every later request.
import http2 from "node:http2";
import { fromBinary, fromJson, toBinary, toJson, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import * as pb from "../../src/server/grpc/gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { mulberry32, type Rng } from "../helpers/prng.ts";
import { portIn, portRange } from "../helpers/ports.ts";
import { send, type FuzzRequest, type RawResponse } from "./v2-raw.ts";
import { firstDifference, headBend, ownFailures, showFailures, startSide, type Divergence, type Failure } from "./v2-differential.ts";

export { etcdAvailable } from "./v2-differential.ts";

// ---------------------------------------------------------------- generator

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
const chance = (rng: Rng, p: number): boolean => rng() < p;
const b64 = (s: string): string => Buffer.from(s, "latin1").toString("base64");

const KEYS = ["a", "b", "c", "ab", "abc", "b/c", "a\0", "\xff", "", "a\xff"];
/** Base64 that Go's decoder refuses or reads its own way (missing padding, URL alphabet, spaces). */
const BAD_B64 = ["YQ", "YQ=", "!!", "Y Q==", "_w==", "-w==", "YQ==\n", "====", "YWI", "Y"];
const VALUES = ["v", "", "hello", "\0", "x".repeat(300)];
/** Over --max-request-bytes (1.5 MiB), and over gRPC's receive limit (that plus 512 KiB). */
const HUGE_VALUES = ["y".repeat(1.6 * 1024 * 1024), "z".repeat(2.1 * 1024 * 1024)];
const WATCH_GAP_MS = 200;
/** The bytes that stand in for a message whose JSON is no such message (a truncated field). */
const BAD_MESSAGE = Buffer.from([0x0a, 0x05, 0x61]);
/** Lease IDs the generator chooses: kept as they are in answers. */
const LEASE_IDS = ["1", "2", "7", "1000", "9223372036854775807"];
/** TTLs long enough that no lease expires during a run. */
const TTLS = [3600, 7200, "3600", 9000000000, 9000000001, 0];
const SHORTEST_TTL_S = 3600;

type Json = JsonValue;
type Obj = { [k: string]: Json };

function keyB64(rng: Rng): string {
  return chance(rng, 0.04) ? pick(rng, BAD_B64) : b64(pick(rng, KEYS));
}

function rangeEnd(rng: Rng, key: string): string {
  const raw = Buffer.from(key, "base64");
  switch (Math.floor(rng() * 5)) {
    case 0:
      return b64("\0");
    case 1: {
      // prefix + 1: the last byte below 0xff incremented, bytes after it dropped
      const b = [...raw];
      while (b.length > 0 && b[b.length - 1] === 0xff) b.pop();
      if (b.length === 0) return b64("\0");
      b[b.length - 1]! += 1;
      return Buffer.from(b).toString("base64");
    }
    case 2:
      return b64(pick(rng, ["", "a"])); // less than or equal to most keys
    case 3:
      return b64(pick(rng, KEYS));
    default:
      return keyB64(rng);
  }
}

/** An int64 field's value, mostly valid, as JSON numbers or strings, sometimes not an integer at all. */
/** Not 0 (nor what reads as 0): see test/fuzz/README.md on a compaction at revision 0. */
const COMPACT_BAD: Json[] = ["abc", -1, 1.5, "1e3", true, "9223372036854775808", [], {}];
const BAD_INT64: Json[] = ["abc", -1, 1.5, "1e3", null, true, "9223372036854775808", [], {}, ""];

function int64(rng: Rng, valid: () => number, bad: Json[] = BAD_INT64): Json {
  if (chance(rng, 0.85)) {
    const n = valid();
    return chance(rng, 0.5) ? n : String(n);
  }
  return pick<Json>(rng, bad);
}

interface Ctx {
  /** The latest revision seen on the reference. */
  rev(): number;
  /** The reference's compaction revision (0: none yet). */
  compacted(): number;
}

function revision(rng: Rng, c: Ctx): number {
  const r = c.rev();
  return pick(rng, [0, 0, r, Math.max(1, r - Math.floor(rng() * 10)), r + 1, r + 100, 1]);
}

function sometimes(rng: Rng, o: Obj, p: number, name: string, v: () => Json): void {
  if (chance(rng, p)) o[name] = v();
}

function rangeReq(rng: Rng, c: Ctx): Obj {
  const key = keyB64(rng);
  const o: Obj = { key };
  sometimes(rng, o, 0.5, "range_end", () => rangeEnd(rng, key));
  sometimes(rng, o, 0.25, "limit", () => int64(rng, () => pick(rng, [0, 1, 2, 3, -1])));
  sometimes(rng, o, 0.2, "revision", () => int64(rng, () => revision(rng, c)));
  sometimes(rng, o, 0.2, "sort_order", () => pick<Json>(rng, ["NONE", "ASCEND", "DESCEND", 1, 2, 7, "FOO", "descend"]));
  sometimes(rng, o, 0.2, "sort_target", () => pick<Json>(rng, ["KEY", "VERSION", "CREATE", "MOD", "VALUE", 3, "BAR"]));
  sometimes(rng, o, 0.1, "serializable", () => pick<Json>(rng, [true, false, "true"]));
  sometimes(rng, o, 0.15, "keys_only", () => pick<Json>(rng, [true, false, 1]));
  sometimes(rng, o, 0.15, "count_only", () => pick<Json>(rng, [true, false]));
  for (const f of ["min_mod_revision", "max_mod_revision", "min_create_revision", "max_create_revision"]) sometimes(rng, o, 0.07, f, () => int64(rng, () => revision(rng, c)));
  return o;
}

function leaseId(rng: Rng): Json {
  return chance(rng, 0.9) ? pick(rng, LEASE_IDS) : pick<Json>(rng, ["0", 0, "-1", "abc", 3]);
}

function putReq(rng: Rng): Obj {
  const o: Obj = { key: keyB64(rng) };
  sometimes(rng, o, 0.85, "value", () => (chance(rng, 0.03) ? pick(rng, BAD_B64) : chance(rng, 0.01) ? b64(HUGE_VALUES[Math.floor(rng() * HUGE_VALUES.length)]!) : b64(pick(rng, VALUES))));
  sometimes(rng, o, 0.15, "lease", () => leaseId(rng));
  sometimes(rng, o, 0.3, "prev_kv", () => pick<Json>(rng, [true, false]));
  sometimes(rng, o, 0.08, "ignore_value", () => true);
  sometimes(rng, o, 0.08, "ignore_lease", () => true);
  return o;
}

function deleteReq(rng: Rng): Obj {
  const key = keyB64(rng);
  const o: Obj = { key };
  sometimes(rng, o, 0.5, "range_end", () => rangeEnd(rng, key));
  sometimes(rng, o, 0.3, "prev_kv", () => true);
  return o;
}

function compare(rng: Rng, c: Ctx): Obj {
  const target = pick(rng, ["VERSION", "CREATE", "MOD", "VALUE", "LEASE"]);
  const key = keyB64(rng);
  const o: Obj = { key, target };
  sometimes(rng, o, 0.8, "result", () => pick(rng, ["EQUAL", "GREATER", "LESS", "NOT_EQUAL"]));
  sometimes(rng, o, 0.15, "range_end", () => rangeEnd(rng, key));
  const field = chance(rng, 0.9) ? { VERSION: "version", CREATE: "create_revision", MOD: "mod_revision", VALUE: "value", LEASE: "lease" }[target]! : pick(rng, ["version", "value", "lease"]);
  if (chance(rng, 0.95)) o[field] = field === "value" ? b64(pick(rng, VALUES)) : field === "lease" ? leaseId(rng) : int64(rng, () => pick(rng, [0, 1, 2, c.rev(), c.rev() - 1]));
  return o;
}

function op(rng: Rng, c: Ctx, depth: number): Obj {
  const r = rng();
  if (r < 0.35) return { request_put: putReq(rng) };
  if (r < 0.65) return { request_range: rangeReq(rng, c) };
  if (r < 0.85 || depth > 1) return { request_delete_range: deleteReq(rng) };
  return { request_txn: txnReq(rng, c, depth + 1) };
}

/**
 * etcd 3.4.23 panics (its applier: "unexpected error during txn") on a put with
 * ignore_value or ignore_lease whose key an earlier op of the same txn deleted: its check
 * looks at the state before the txn only. Such puts lose the flags when they follow a
 * delete or a nested txn (test/fuzz/README.md).
 */
function safeBranch(ops: Obj[]): Obj[] {
  let deleted = false;
  for (const o of ops) {
    const put = o["request_put"] as Obj | undefined;
    if (put !== undefined && deleted) {
      delete put["ignore_value"];
      delete put["ignore_lease"];
    }
    if ("request_delete_range" in o || "request_txn" in o) deleted = true;
  }
  return ops;
}

function txnReq(rng: Rng, c: Ctx, depth = 0): Obj {
  const o: Obj = {};
  const n = (max: number): number => Math.floor(rng() * max);
  if (chance(rng, 0.8)) o["compare"] = Array.from({ length: n(3) }, () => compare(rng, c));
  if (chance(rng, 0.8)) o["success"] = safeBranch(Array.from({ length: n(4) }, () => op(rng, c, depth)));
  if (chance(rng, 0.6)) o["failure"] = safeBranch(Array.from({ length: n(3) }, () => op(rng, c, depth)));
  if (depth === 0 && chance(rng, 0.05)) o["success"] = Array.from({ length: 129 }, (_, i) => ({ request_range: { key: b64(`k${i}`) } })); // over --max-txn-ops (128)
  if (depth === 0 && chance(rng, 0.05)) {
    // The same key written twice in one branch: etcd refuses duplicates.
    const k = keyB64(rng);
    o["success"] = [{ request_put: { key: k, value: b64("1") } }, chance(rng, 0.5) ? { request_put: { key: k, value: b64("2") } } : { request_delete_range: { key: k } }];
  }
  return o;
}

/** One call: the gateway path (after /v3) and its JSON body; gRPC's method and schemas. */
interface Call {
  path: string;
  grpc: string;
  req: DescMessage;
  res: DescMessage;
}

const CALLS: Record<string, Call> = {
  range: { path: "/kv/range", grpc: "/etcdserverpb.KV/Range", req: pb.RangeRequestSchema, res: pb.RangeResponseSchema },
  put: { path: "/kv/put", grpc: "/etcdserverpb.KV/Put", req: pb.PutRequestSchema, res: pb.PutResponseSchema },
  deleterange: { path: "/kv/deleterange", grpc: "/etcdserverpb.KV/DeleteRange", req: pb.DeleteRangeRequestSchema, res: pb.DeleteRangeResponseSchema },
  txn: { path: "/kv/txn", grpc: "/etcdserverpb.KV/Txn", req: pb.TxnRequestSchema, res: pb.TxnResponseSchema },
  compaction: { path: "/kv/compaction", grpc: "/etcdserverpb.KV/Compact", req: pb.CompactionRequestSchema, res: pb.CompactionResponseSchema },
  grant: { path: "/lease/grant", grpc: "/etcdserverpb.Lease/LeaseGrant", req: pb.LeaseGrantRequestSchema, res: pb.LeaseGrantResponseSchema },
  revoke: { path: "/lease/revoke", grpc: "/etcdserverpb.Lease/LeaseRevoke", req: pb.LeaseRevokeRequestSchema, res: pb.LeaseRevokeResponseSchema },
  timetolive: { path: "/lease/timetolive", grpc: "/etcdserverpb.Lease/LeaseTimeToLive", req: pb.LeaseTimeToLiveRequestSchema, res: pb.LeaseTimeToLiveResponseSchema },
  leases: { path: "/lease/leases", grpc: "/etcdserverpb.Lease/LeaseLeases", req: pb.LeaseLeasesRequestSchema, res: pb.LeaseLeasesResponseSchema },
  status: { path: "/maintenance/status", grpc: "/etcdserverpb.Maintenance/Status", req: pb.StatusRequestSchema, res: pb.StatusResponseSchema },
  members: { path: "/cluster/member/list", grpc: "/etcdserverpb.Cluster/MemberList", req: pb.MemberListRequestSchema, res: pb.MemberListResponseSchema },
  alarm: { path: "/maintenance/alarm", grpc: "/etcdserverpb.Maintenance/Alarm", req: pb.AlarmRequestSchema, res: pb.AlarmResponseSchema },
  defragment: { path: "/maintenance/defragment", grpc: "/etcdserverpb.Maintenance/Defragment", req: pb.DefragmentRequestSchema, res: pb.DefragmentResponseSchema },
  moveleader: { path: "/maintenance/transfer-leadership", grpc: "/etcdserverpb.Maintenance/MoveLeader", req: pb.MoveLeaderRequestSchema, res: pb.MoveLeaderResponseSchema },
  memberadd: { path: "/cluster/member/add", grpc: "/etcdserverpb.Cluster/MemberAdd", req: pb.MemberAddRequestSchema, res: pb.MemberAddResponseSchema },
  userlist: { path: "/auth/user/list", grpc: "/etcdserverpb.Auth/UserList", req: pb.AuthUserListRequestSchema, res: pb.AuthUserListResponseSchema },
  roleget: { path: "/auth/role/get", grpc: "/etcdserverpb.Auth/RoleGet", req: pb.AuthRoleGetRequestSchema, res: pb.AuthRoleGetResponseSchema },
  authenticate: { path: "/auth/authenticate", grpc: "/etcdserverpb.Auth/Authenticate", req: pb.AuthenticateRequestSchema, res: pb.AuthenticateResponseSchema },
  watch: { path: "/watch", grpc: "/etcdserverpb.Watch/Watch", req: pb.WatchRequestSchema, res: pb.WatchResponseSchema },
  keepalive: { path: "/lease/keepalive", grpc: "/etcdserverpb.Lease/LeaseKeepAlive", req: pb.LeaseKeepAliveRequestSchema, res: pb.LeaseKeepAliveResponseSchema },
};

/** The gateway's aliases of the lease calls (etcd 3.4 serves both). */
const ALIASES: Record<string, string> = { "/lease/revoke": "/kv/lease/revoke", "/lease/timetolive": "/kv/lease/timetolive", "/lease/leases": "/kv/lease/leases" };

function watchCreate(rng: Rng, c: Ctx): Obj {
  const key = keyB64(rng);
  const o: Obj = { key };
  sometimes(rng, o, 0.5, "range_end", () => rangeEnd(rng, key));
  // From history most often: the events come at once, not at a timing's whim.
  // Not from the compaction revision itself: kvctl replays the deletes made at it, etcd
  // compacted them away (a deliberate difference, src/store/v3/README.md).
  const avoid = (r: number): number => (r === c.compacted() ? r + 1 : r);
  o["start_revision"] = int64(rng, () => avoid(pick(rng, [1, 2, Math.max(1, c.rev() - 5), c.rev(), c.rev() + 1])));
  sometimes(rng, o, 0.3, "prev_kv", () => true);
  sometimes(rng, o, 0.15, "filters", () => [pick(rng, ["NOPUT", "NODELETE", 0, 1])]);
  sometimes(rng, o, 0.05, "fragment", () => true);
  sometimes(rng, o, 0.1, "watch_id", () => int64(rng, () => pick(rng, [0, 1, 5, -1])));
  return o;
}

export type Wire = "gw" | "grpc";

export interface V3Request {
  wire: Wire;
  name: string;
  /** The call's JSON (gateway form) as written by the generator; for a watch, one line per message. */
  json: Json[];
  /** The gateway request as sent (method, target, headers, body). */
  http: FuzzRequest;
  /** gRPC: the message bytes (undefined: the JSON did not read as the message, `bad` stands in). */
  grpcBody?: Uint8Array;
  /** gRPC, a stream: each message framed, written WATCH_GAP_MS apart. */
  grpcParts?: Buffer[];
  /** gRPC: another method path than the call's (unknown services and methods). */
  grpcPath?: string;
  /** gRPC bends: header changes, the flag byte, junk appended. */
  grpcHeaders: Record<string, string | undefined>;
  grpcFlag: number;
  stream: boolean;
  /** Lease IDs the servers chose appear in the answer. */
  waitMs: number;
}

function grpcBytes(call: Call, json: Json, rng: Rng): Uint8Array | undefined {
  let bytes: Uint8Array;
  try {
    bytes = toBinary(call.req, fromJson(call.req, json, { ignoreUnknownFields: false }));
  } catch {
    return undefined;
  }
  switch (Math.floor(rng() * 25)) {
    case 0:
      return Buffer.concat([bytes, Buffer.from([0xa0, 0x06, 0x01])]); // unknown varint field 100
    case 1:
      return Buffer.concat([bytes, Buffer.from([0xfa, 0x07, 0x02, 0x68, 0x69])]); // unknown bytes field 127
    case 2:
      return bytes.subarray(0, Math.max(0, bytes.length - 1)); // truncated
    case 3:
      return Buffer.concat([bytes, Buffer.from([0x0a])]); // a tag without its length
    case 4:
      return Buffer.concat([bytes, Buffer.from([0x0f])]); // wire type 7
    default:
      return bytes;
  }
}

/**
 * A seeded request generator. `rev` tells it the reference's latest revision, so watches
 * and revision-bound reads land in history.
 */
export function* generateRequests(seed: number, count: number, c: Ctx): Generator<V3Request> {
  const rng = mulberry32(seed);
  for (let n = 0; n < count; n++) {
    const wire: Wire = chance(rng, 0.5) ? "gw" : "grpc";
    const r = rng();
    let name: string;
    let json: Json;
    if (r < 0.22) [name, json] = ["put", putReq(rng)];
    else if (r < 0.42) [name, json] = ["range", rangeReq(rng, c)];
    else if (r < 0.5) [name, json] = ["deleterange", deleteReq(rng)];
    else if (r < 0.65) [name, json] = ["txn", txnReq(rng, c)];
    else if (r < 0.67) [name, json] = ["compaction", { revision: int64(rng, () => Math.max(1, pick(rng, [c.rev() - 20, c.rev() - 3, c.rev(), c.rev() + 1])), COMPACT_BAD), ...(chance(rng, 0.3) ? { physical: true } : {}) }];
    else if (r < 0.72) {
      const o: Obj = { TTL: chance(rng, 0.9) ? pick<Json>(rng, TTLS) : pick<Json>(rng, ["abc", null]) };
      if (chance(rng, 0.97)) o["ID"] = leaseId(rng); // a server-chosen ID is rare: mapped by rank
      [name, json] = ["grant", o];
    } else if (r < 0.75) [name, json] = ["revoke", { ID: leaseId(rng) }];
    else if (r < 0.79) [name, json] = ["timetolive", { ID: leaseId(rng), ...(chance(rng, 0.5) ? { keys: true } : {}) }];
    else if (r < 0.8) [name, json] = ["leases", {}];
    else if (r < 0.81) [name, json] = ["status", {}];
    else if (r < 0.82) [name, json] = ["members", chance(rng, 0.5) ? {} : { linearizable: true }];
    else if (r < 0.83) [name, json] = [pick(rng, ["userlist", "roleget", "authenticate"]), pick<Json>(rng, [{}, { role: "r" }, { name: "u", password: "p" }])];
    else if (r < 0.835) {
      // Maintenance and cluster calls that change nothing: alarms read, a defragment, a
      // leader transfer to nobody, members that cannot be added.
      [name, json] = pick<[string, Json]>(rng, [
        // (No unknown action number: etcd 3.4.23 crashes on one, README.)
        ["alarm", { action: pick<Json>(rng, ["GET", 0, "DEACTIVATE", "FOO"]), ...(chance(rng, 0.5) ? { alarm: pick<Json>(rng, ["NONE", "NOSPACE", "CORRUPT", 5]) } : {}) }],
        ["defragment", {}],
        ["moveleader", { targetID: pick<Json>(rng, ["0", "12345", 7, "abc"]) }],
        ["memberadd", { peerURLs: pick<Json>(rng, [[], ["foo"], ["http://"], ["http://a:1", 5], null]) }],
      ]);
    }
    else if (r < 0.92) {
      const msgs: Json[] = [{ create_request: watchCreate(rng, c) }];
      if (chance(rng, 0.2)) msgs.push({ create_request: watchCreate(rng, c) });
      if (chance(rng, 0.25)) msgs.push({ cancel_request: { watch_id: int64(rng, () => pick(rng, [0, 1, 3])) } });
      if (chance(rng, 0.05)) msgs.push({ progress_request: {} });
      yield streamRequest(rng, wire, "watch", msgs);
      continue;
    } else if (r < 0.94) {
      // Keep-alives of leases that exist or not (a stream: one answer per request).
      yield streamRequest(rng, wire, "keepalive", Array.from({ length: 1 + Math.floor(rng() * 2) }, () => ({ ID: leaseId(rng) })));
      continue;
    } else {
      name = pick(rng, ["range", "put", "deleterange", "txn", "grant", "revoke", "timetolive", "leases", "members", "userlist", "roleget", "authenticate"]);
      json = chance(rng, 0.5) ? {} : rangeReq(rng, c);
    }
    // Malformed JSON shapes, the same on both wires where they mean anything.
    const obj = json as Obj;
    const m = rng();
    if (m < 0.04) obj[pick(rng, ["foo", "Key", "key ", "range_end2"])] = 1; // unknown field
    else if (m < 0.07) obj[pick(rng, Object.keys(obj).concat(["key"]))] = null;
    else if (m < 0.09) obj["key"] = pick<Json>(rng, [1, true, [], {}]);
    else if (m < 0.11 && "range_end" in obj) {
      obj["rangeEnd"] = obj["range_end"]!; // proto3 JSON's lowerCamel name: jsonpb takes both
      delete obj["range_end"];
    }
    // A compaction at revision 0 is a state kvctl does not model (README).
    if (name === "compaction" && (obj["revision"] === null || obj["revision"] === undefined)) obj["revision"] = Math.max(1, c.rev());
    let followUp: V3Request | undefined;
    if (name === "grant" && !(Number(obj["TTL"]) >= SHORTEST_TTL_S)) {
      // A short lease (etcd raises it to its 2 s minimum) would expire at each server's own
      // moment: one with an ID of its own is revoked by the next request, a server-chosen
      // one is made long.
      const id = obj["ID"];
      // The revoke goes out unbent (a bent one may fail and leave the short lease to expire).
      if ((typeof id === "string" || typeof id === "number") && /^-?[1-9]\d*$/.test(String(id))) followUp = unaryRequest(() => 0.99, wire, "revoke", { ID: String(id) });
      else obj["TTL"] = SHORTEST_TTL_S;
    }
    yield unaryRequest(rng, wire, name, json);
    if (followUp !== undefined) yield followUp;
  }
}

function gwTarget(rng: Rng, path: string): string {
  const alias = ALIASES[path];
  if (alias !== undefined && chance(rng, 0.4)) return "/v3" + alias;
  return (chance(rng, 0.1) ? "/v3beta" : "/v3") + path;
}

function unaryRequest(rng: Rng, wire: Wire, name: string, json: Json): V3Request {
  const call = CALLS[name]!;
  let body = JSON.stringify(json);
  const headers: [string, string][] = [];
  let method = "POST";
  let target = gwTarget(rng, call.path);
  const m = rng();
  // (Not a grant's: an empty one is a 2 s lease the server names, which would expire; nor
  // a compaction's: at revision 0, README. An oversized body is not doubled: README.)
  if (m < 0.03 && name !== "grant" && name !== "compaction") body = pick(rng, ["{", "", "[]", "null", '{"key": "YQ==",}', "{}{}", '"x"', "{} x", body.length > 1 << 20 ? "{} {}" : body + "\n" + body, '{"key":"YQ==","key":"Yg=="}', '{"key":"YQ==","value":"dg==","value":null}', '{"key":"\\u0059Q=="}', ' \t{"key":"YQ=="}\n ']);
  else if (m < 0.05) method = pick(rng, ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]);
  else if (m < 0.07) target = pick(rng, ["/v3/kv/ranges", "/v3/kv", "/v3/kv/range/", "/V3/kv/range", "/v3alpha/kv/range", "/v3/kv//range", "/v3/lease/keepalive", "/v3/watch/x"]);
  else if (m < 0.09) headers.push(["Content-Type", pick(rng, ["text/plain", "application/json", "application/x-www-form-urlencoded"])]);
  else if (m < 0.1) target += pick(rng, ["?key=YQ==", "?", "?limit=1&x", "#frag", "?%zz"]);
  else if (m < 0.105) headers.push(["Origin", "http://example.com"]);
  else if (m < 0.11) headers.push([pick(rng, ["Authorization", "Grpc-Metadata-Token", "Grpc-Timeout", "Accept"]), pick(rng, ["junk", "5S", "", "application/json"])]);
  else if (m < 0.115) headers.push(["Grpc-Timeout", pick(rng, ["-5S", "0S", "5", "1x", "+3M", "99999999999999999999S", "10n"])]);
  else if (m < 0.12) headers.push([pick(rng, ["Grpc-Metadata-Foo-Bin", "grpc-metadata-token-bin"]), pick(rng, ["!!!", "YQ", "YQ=", "Y", "YQ==", "a b"])]);
  else if (m < 0.125) headers.push(...headBend(rng));
  if (m >= 0.03 && m < 0.05 && method === "GET" && chance(rng, 0.5)) body = "";
  const grpcHeaders: Record<string, string | undefined> = {};
  let grpcFlag = 0;
  const g = rng();
  if (g < 0.02) grpcHeaders["content-type"] = pick(rng, ["application/json", "application/grpc+proto", "application/grpc+json", "text/plain"]);
  else if (g < 0.04) grpcHeaders["te"] = undefined;
  else if (g < 0.05) grpcFlag = 1;
  else if (g < 0.06) grpcFlag = 2;
  else if (g < 0.07) grpcHeaders[pick(rng, ["grpc-timeout", "token", "authorization", "grpc-encoding", "hasleader"])] = pick(rng, ["tomorrow", "5S", "junk", "identity", "true", ""]);
  const grpcBody = grpcBytes(call, json, rng);
  let grpcPath: string | undefined;
  if (chance(rng, 0.01)) grpcPath = pick(rng, ["/etcdserverpb.KV/Nope", "/etcdserverpb.Nope/Range", "etcdserverpb.KV/Range", "/etcdserverpb.KV/", "/", "/etcdserverpb.kv/Range", "/etcdserverpb.KV/Range/"]);
  return {
    ...(grpcPath === undefined ? {} : { grpcPath }),
    wire,
    name,
    json: [json],
    http: { method, target, headers, ...(method === "GET" && body === "" ? {} : { body }), mayBlock: false },
    ...(grpcBody === undefined ? {} : { grpcBody }),
    grpcHeaders,
    grpcFlag,
    stream: false,
    waitMs: 5000,
  };
}

function streamRequest(rng: Rng, wire: Wire, name: "watch" | "keepalive", msgs: Json[]): V3Request {
  const call = CALLS[name]!;
  // The gateway's stream reads one JSON value after another from the body.
  const sep = chance(rng, 0.5) ? "\n" : "";
  const parts = msgs.map((m, i) => (i > 0 ? sep : "") + JSON.stringify(m));
  const grpcParts = msgs.map((m) => frame(0, grpcBytes(call, m, rng) ?? BAD_MESSAGE));
  if (chance(rng, 0.1)) {
    // A bad message after the good ones: the stream ends with an error, what came before stays.
    parts.push(sep + pick(rng, ['{"create_request":{"key":5}}', '{"foo":{}}', "{", "null", "[]", '"x"', '{"create_request":{"key":"YQ==","start_revision":"x"}}']));
    grpcParts.push(frame(0, pick(rng, [BAD_MESSAGE, Buffer.from([0x0a, 0x02, 0x0a, 0x00, 0xa0, 0x06, 0x01]), Buffer.from([0x0f])])));
  }
  return {
    wire,
    name,
    json: msgs,
    // A gap between messages: etcd sends history and compaction answers from its sync
    // loop (every 100 ms), so a next request sent at once would race them.
    http: { method: "POST", target: (chance(rng, 0.1) ? "/v3beta" : "/v3") + call.path, headers: [], body: parts.join(""), bodyParts: parts, gapMs: WATCH_GAP_MS, mayBlock: true },
    grpcParts,
    grpcHeaders: {},
    grpcFlag: -1,
    stream: true,
    waitMs: WATCH_GAP_MS * msgs.length + 250,
  };
}

// ---------------------------------------------------------------- gRPC client

function frame(flag: number, msg: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flag;
  head.writeUInt32BE(msg.length, 1);
  return Buffer.concat([head, msg]);
}

export interface GrpcAnswer {
  httpStatus: number;
  contentType?: string;
  grpcStatus?: string;
  grpcMessage?: string;
  messages: Uint8Array[];
  /** The stream did not end within the wait (a watch). */
  pending?: boolean;
  error?: string;
}

/** One HTTP/2 session per server, replaced when it closes (a GOAWAY, a reset connection). */
export class GrpcChannel {
  #session: http2.ClientHttp2Session | undefined;
  readonly port: number;
  constructor(port: number) {
    this.port = port;
  }
  #get(): http2.ClientHttp2Session {
    if (this.#session === undefined || this.#session.closed || this.#session.destroyed) {
      const s = http2.connect(`http://127.0.0.1:${this.port}`);
      s.on("error", () => undefined);
      s.on("close", () => {
        if (this.#session === s) this.#session = undefined;
      });
      this.#session = s;
    }
    return this.#session;
  }
  close(): void {
    this.#session?.close();
  }
  /** One call: `body` written and the request ended, or (an array) each part written `gapMs` apart and the request left open. */
  call(path: string, body: Buffer | Buffer[], headers: Record<string, string | undefined>, waitMs: number, gapMs = 0): Promise<GrpcAnswer> {
    const s = this.#get();
    const h: http2.OutgoingHttpHeaders = { ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" };
    for (const [k, v] of Object.entries(headers)) {
      if (v === undefined) delete h[k];
      else h[k] = v;
    }
    return new Promise((resolve) => {
      const a: GrpcAnswer = { httpStatus: 0, messages: [] };
      let buf = Buffer.alloc(0);
      let req: http2.ClientHttp2Stream;
      try {
        req = s.request(h, { endStream: false });
      } catch (e) {
        resolve({ httpStatus: 0, messages: [], error: `client refused: ${(e as Error).message}` });
        return;
      }
      let done = false;
      const finish = (pending: boolean): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (pending) a.pending = true;
        if (!req.closed) req.close(http2.constants.NGHTTP2_CANCEL);
        resolve(a);
      };
      const timer = setTimeout(() => finish(true), waitMs);
      const status = (hd: http2.IncomingHttpHeaders): void => {
        if (hd["grpc-status"] !== undefined) a.grpcStatus = String(hd["grpc-status"]);
        if (hd["grpc-message"] !== undefined) a.grpcMessage = decodeURIComponent(String(hd["grpc-message"]));
      };
      req.on("response", (hd) => {
        a.httpStatus = Number(hd[":status"]);
        if (hd["content-type"] !== undefined) a.contentType = String(hd["content-type"]);
        status(hd);
      });
      req.on("trailers", status);
      req.on("data", (c: Buffer) => {
        buf = Buffer.concat([buf, c]);
        while (buf.length >= 5 && buf.length >= 5 + buf.readUInt32BE(1)) {
          const n = buf.readUInt32BE(1);
          a.messages.push(buf.subarray(5, 5 + n));
          buf = buf.subarray(5 + n);
        }
      });
      req.on("error", (e: Error & { code?: string }) => {
        a.error = e.code ?? e.message;
      });
      req.on("close", () => finish(false));
      if (Buffer.isBuffer(body)) req.end(body);
      else body.forEach((part, i) => setTimeout(() => !req.closed && req.write(part), i * gapMs));
    });
  }
}

// ---------------------------------------------------------------- normalisation

/** Per-server symbols: ids, and lease IDs the server chose (by rank of first appearance). */
export class Normalizer {
  readonly #ids = new Map<string, number>();
  readonly #leases = new Map<string, number>();
  readonly ports: number[];
  readonly name: string;
  constructor(ports: number[], name: string) {
    this.ports = ports;
    this.name = name;
  }
  id(v: string): string {
    if (!this.#ids.has(v)) this.#ids.set(v, this.#ids.size + 1);
    return `<id${this.#ids.get(v)!}>`;
  }
  lease(v: string): string {
    if (LEASE_IDS.includes(v) || /^-?\d{1,6}$/.test(v)) return v;
    if (!this.#leases.has(v)) this.#leases.set(v, this.#leases.size + 1);
    return `<lease${this.#leases.get(v)!}>`;
  }
  text(s: string): string {
    let out = s;
    this.ports.forEach((p, i) => (out = out.split(String(p)).join(`<port${i}>`)));
    return out.split(this.name).join("<name>");
  }
}

type Fuzzy = { fuzzy: "ttl"; v: number };

const STATUS_MASKED = new Set(["dbSize", "db_size", "dbSizeInUse", "db_size_in_use", "raftIndex", "raft_index", "raftAppliedIndex", "raft_applied_index", "raftTerm", "raft_term"]);

function norm(N: Normalizer, v: unknown, parent = ""): unknown {
  if (Array.isArray(v)) {
    const out = v.map((x) => norm(N, x, parent));
    // etcd lists leases, and a lease's keys, in Go map order
    if (parent === "leases" || parent === "keys") out.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    return out;
  }
  if (v === null || typeof v !== "object") return typeof v === "string" ? N.text(v) : v;
  const obj = v as Record<string, unknown>;
  const o: Record<string, unknown> = {};
  for (const k of Object.keys(obj).sort()) {
    const x = obj[k];
    const s = typeof x === "string" || typeof x === "number" ? String(x) : undefined;
    if ((k === "cluster_id" || k === "member_id" || k === "leader" || (k === "ID" && (parent === "members" || parent === "member"))) && s !== undefined) o[k] = N.id(s);
    else if (k === "raft_term" && parent === "header") o[k] = "<term>";
    else if (STATUS_MASKED.has(k) && parent === "") o[k] = "<masked>";
    else if ((k === "ID" || k === "lease" || k === "id") && s !== undefined) o[k] = N.lease(s);
    else if (k === "TTL" && typeof s === "string" && parent === "ttl") o[k] = { fuzzy: "ttl", v: Number(s) } satisfies Fuzzy;
    else o[k] = norm(N, x, k === "result" ? parent : k);
  }
  return o;
}

function fieldOrder(v: unknown): string {
  if (Array.isArray(v)) return "[" + v.map(fieldOrder).join(",") + "]";
  if (v === null || typeof v !== "object") return "";
  return "{" + Object.entries(v as Record<string, unknown>).map(([k, x]) => k + fieldOrder(x)).join(",") + "}";
}

export interface Normalized {
  status: number;
  headers?: Record<string, string>;
  grpc?: { status?: string; message?: string; contentType?: string; error?: string; bytes?: string[] };
  body: unknown;
  pending?: boolean;
}

const GW_HEADERS = new Set(["content-type", "grpc-metadata-content-type", "allow", "location", "access-control-allow-origin", "access-control-allow-methods", "access-control-allow-headers"]);

export function normalizeGateway(N: Normalizer, req: V3Request, r: RawResponse): Normalized {
  const headers: Record<string, string> = {};
  for (const [k, v] of r.headers) if (GW_HEADERS.has(k) || k.startsWith("grpc-")) headers[k] = N.text(v);
  // Framing: Go gives a short complete answer a Content-Length, a streamed one chunks.
  if (r.noHead !== true && r.pending !== true && r.body.length < 2000) headers["(framing)"] = r.headers.get("transfer-encoding") === "chunked" ? "chunked" : "whole";
  let body: unknown = N.text(r.body);
  if (r.body.trim() !== "" && (r.headers.get("content-type") ?? "").includes("json")) {
    try {
      const lines = r.body.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as unknown);
      body = lines.map((l) => norm(N, l, req.name === "timetolive" ? "ttl" : ""));
      // Field order as written (jsonpb writes proto field order), values left out.
      if (req.name !== "leases" && req.name !== "timetolive") headers["(field order)"] = lines.map(fieldOrder).join(" ");
    } catch {
      body = N.text(r.body);
    }
  }
  return { status: r.noHead === true ? 0 : r.status, headers, body, ...(r.pending === true ? { pending: true } : {}) };
}

/**
 * A message's bytes past its top-level header (field 1, whose ids differ by design), in
 * hex: the encoding itself compared (field order, defaults left out), not just what it
 * decodes to.
 */
function bytesPastHeader(m: Uint8Array): string {
  const out: string[] = [];
  let i = 0;
  const varint = (): number => {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (i >= m.length) throw new Error("truncated");
      const b = m[i++]!;
      v += (b & 127) * mul;
      if (b < 128) return v;
      mul *= 128;
    }
  };
  while (i < m.length) {
    const start = i;
    const tag = varint();
    const wt = tag & 7;
    if (wt === 0) varint();
    else if (wt === 2) {
      const n = varint();
      i += n;
    }
    else if (wt === 1) i += 8;
    else if (wt === 5) i += 4;
    else return "<bad wire type>";
    if (tag !== 0x0a) out.push(Buffer.from(m.subarray(start, i)).toString("hex"));
  }
  return out.join(" ");
}

/** Calls whose answers carry what differs by design outside the header (sizes, ids, names). */
const NO_BYTES = new Set(["status", "members", "timetolive", "leases", "memberadd"]);

export function normalizeGrpc(N: Normalizer, req: V3Request, a: GrpcAnswer): Normalized {
  const call = CALLS[req.name]!;
  const body = a.messages.map((m) => {
    try {
      return norm(N, toJson(call.res, fromBinary(call.res, m), { useProtoFieldName: true }), req.name === "timetolive" ? "ttl" : "");
    } catch (e) {
      return `<undecodable ${(e as Error).message}>`;
    }
  });
  const grpc: Normalized["grpc"] = {};
  if (!NO_BYTES.has(req.name) && !JSON.stringify(body).includes("<lease")) {
    try {
      grpc.bytes = a.messages.map(bytesPastHeader);
    } catch {
      grpc.bytes = ["<undecodable>"];
    }
  }
  if (a.grpcStatus !== undefined) grpc.status = a.grpcStatus;
  if (a.grpcMessage !== undefined) grpc.message = N.text(a.grpcMessage);
  if (a.contentType !== undefined) grpc.contentType = a.contentType;
  if (a.error !== undefined && a.httpStatus === 0) grpc.error = a.error;
  return { status: a.httpStatus, grpc, body, ...(a.pending === true ? { pending: true } : {}) };
}

// ---------------------------------------------------------------- running

export interface DifferentialOptions {
  seed: number;
  count: number;
  etcdPort: number;
  kvctlPort: number;
  etcdPorts: number[];
  kvctlPorts: number[];
  maxDivergences?: number;
  onProgress?: (sent: number, divergence: Divergence | undefined) => void;
  onStop?: (sent: number, why: string) => void;
  /** Print every request and both answers (FUZZ_TRACE=1). */
  trace?: boolean;
  /** Only these wires (both by default). */
  wires?: Wire[];
}

function show(req: V3Request): string {
  if (req.wire === "gw") return `gw ${req.http.method} ${req.http.target}${req.http.body !== undefined ? ` body=${JSON.stringify(req.http.body.length > 400 ? req.http.body.slice(0, 400) + "…" : req.http.body)}` : ""}${req.http.headers.length > 0 ? ` ${JSON.stringify(req.http.headers.map(([k, v]) => [k, v.length > 200 ? `${v.slice(0, 20)}…(${v.length})` : v]))}` : ""}`;
  const hs = Object.keys(req.grpcHeaders).length > 0 ? ` headers=${JSON.stringify(req.grpcHeaders, (_k, v: unknown) => (v === undefined ? "<absent>" : v))}` : "";
  const bytes = req.grpcParts !== undefined ? req.grpcParts.map((p) => p.toString("hex")).join(" ").slice(0, 300) : req.grpcBody === undefined ? "<bad bytes>" : Buffer.from(req.grpcBody).toString("hex").slice(0, 200);
  return `grpc ${req.grpcPath ?? CALLS[req.name]!.grpc} json=${JSON.stringify(req.json).slice(0, 400)} bytes=${bytes}${req.grpcFlag > 0 ? ` flag=${req.grpcFlag}` : ""}${hs}`;
}


async function sendOne(port: number, ch: GrpcChannel, req: V3Request, N: Normalizer): Promise<Normalized> {
  if (req.wire === "gw") {
    const r = await send(port, req.http, req.stream ? req.waitMs : 5000);
    return normalizeGateway(N, req, r);
  }
  const call = CALLS[req.name]!;
  const body = req.grpcParts ?? frame(req.grpcFlag, req.grpcBody ?? BAD_MESSAGE);
  const a = await ch.call(req.grpcPath ?? call.grpc, body, req.grpcHeaders, req.stream ? req.waitMs : 5000, WATCH_GAP_MS);
  return normalizeGrpc(N, req, a);
}

/** The revision both servers report for a range (the run needs them equal at the start). */
async function revisionOf(port: number): Promise<number> {
  const r = await send(port, { method: "POST", target: "/v3/kv/range", headers: [], body: '{"key":"AA=="}', mayBlock: false }, 5000);
  return Number((JSON.parse(r.body) as { header: { revision: string } }).header.revision);
}

/** Where two normalised answers differ in a way kvctl keeps on purpose (test/fuzz/README.md). */
export function knownDifference(_req: V3Request, _diff: string, _etcd: Normalized, _kvctl: Normalized): boolean {
  return false;
}

/**
 * A failure (v2-differential.ts's Failure): a gateway 500 or no answer; over gRPC an
 * Internal status, or a unary call that ended without one (no trailers, a reset, nothing
 * within the wait). A stream may stay open (a watch waits); it may not lose its status.
 */
export function failed(req: V3Request, r: Normalized): boolean {
  if (req.wire === "gw") return r.status === 500 || r.status === 0 || (r.pending === true && !req.stream);
  if (r.grpc?.status === "13") return true;
  return !req.stream && (r.grpc?.status === undefined || r.pending === true);
}

export async function runDifferential(o: DifferentialOptions): Promise<{ sent: number; divergences: Divergence[]; failures: Failure[] }> {
  const NE = new Normalizer(o.etcdPorts, "ref");
  const NK = new Normalizer(o.kvctlPorts, "sut");
  const ce = new GrpcChannel(o.etcdPort);
  const ck = new GrpcChannel(o.kvctlPort);
  const divergences: Divergence[] = [];
  const failures: Failure[] = [];
  let rev = await revisionOf(o.etcdPort);
  const rk = await revisionOf(o.kvctlPort);
  if (rev !== rk) throw new Error(`the servers start at different revisions: etcd ${rev}, kvctl ${rk}`);
  let sent = 0;
  let compacted = 0;
  const started = Date.now();
  try {
    for (const req0 of generateRequests(o.seed, o.count, { rev: () => rev, compacted: () => compacted })) {
      if (sent >= o.count) break; // a follow-up request went past it
      if (Date.now() - started > (SHORTEST_TTL_S - 60) * 1000) {
        o.onStop?.(sent, `stopped after ${sent} requests: leases with a ${SHORTEST_TTL_S} s TTL would start expiring`);
        break;
      }
      const req = o.wires !== undefined && !o.wires.includes(req0.wire) ? { ...req0, wire: o.wires[0]! } : req0;
      // The two servers share nothing: both asked at once (a watch waits out its gaps once).
      const [e, k] = await Promise.all([sendOne(o.etcdPort, ce, req, NE), sendOne(o.kvctlPort, ck, req, NK)]);
      sent++;
      if (o.trace === true) console.log(`#${sent} ${show(req)}\n  etcd:  ${JSON.stringify(e).slice(0, 600)}\n  kvctl: ${JSON.stringify(k).slice(0, 600)}`);
      if (req.name === "compaction" && (e.status === 200 && (req.wire === "gw" || e.grpc?.status === "0"))) {
        const at = Number((req.json[0] as Obj | null)?.["revision"]);
        if (Number.isSafeInteger(at) && at > compacted) compacted = at;
      }
      for (const b of Array.isArray(e.body) ? e.body : []) {
        const h = (b as { header?: { revision?: string }; result?: { header?: { revision?: string } } } | null);
        const r = Number(h?.header?.revision ?? h?.result?.header?.revision ?? 0);
        if (r > rev) rev = r;
      }
      if (failed(req, k)) failures.push({ n: sent, request: show(req), kvctl: JSON.stringify(k).slice(0, 600), etcdToo: failed(req, e) });
      const d = firstDifference(e, k);
      if (d !== undefined && !knownDifference(req, d, e, k)) {
        const dv = { n: sent, request: show(req), difference: d, etcd: JSON.stringify(e).slice(0, 1500), kvctl: JSON.stringify(k).slice(0, 1500) };
        divergences.push(dv);
        o.onProgress?.(sent, dv);
        if (divergences.length >= (o.maxDivergences ?? 20)) break;
      } else {
        o.onProgress?.(sent, undefined);
      }
    }
  } finally {
    ce.close();
    ck.close();
  }
  return { sent, divergences, failures };
}

/** A port for the fuzzer's servers: KVCTL_FUZZ_V3_PORTS ("lo-hi"), else 27000-27999. */
export function fuzzPort(): Promise<number> {
  return portIn(portRange("KVCTL_FUZZ_V3_PORTS", [27000, 27999])!);
}

/** etcd and kvctl side by side, fresh, for `body`; both stopped afterwards. */
export async function withServers<T>(kvctlBin: string, body: (ports: { etcd: number[]; kvctl: number[] }) => Promise<T>): Promise<T> {
  const [a, b, c, d] = [await fuzzPort(), await fuzzPort(), await fuzzPort(), await fuzzPort()];
  const etcd = await startSide("etcd", a, b, kvctlBin);
  try {
    const kv = await startSide("kvctl", c, d, kvctlBin);
    try {
      return await body({ etcd: etcd.ports, kvctl: kv.ports });
    } finally {
      await kv.stop();
    }
  } finally {
    await etcd.stop();
  }
}

export function showDivergence(dv: Divergence): string {
  return `#${dv.n} ${dv.request}\n  ${dv.difference}\n  etcd:  ${dv.etcd}\n  kvctl: ${dv.kvctl}`;
}

async function main(): Promise<void> {
  const seed = Number(process.argv[2] ?? Date.now() % 1e9);
  const count = Number(process.argv[3] ?? 1000);
  const wires = process.env["FUZZ_WIRES"]?.split(",").filter((w): w is Wire => w === "gw" || w === "grpc");
  // KVCTL_FUZZ_BIN: another kvctl entry file (a worktree's bin/kvctl, say) than this checkout's.
  const kvctlBin = process.env["KVCTL_FUZZ_BIN"] ?? (await import("../helpers/server.ts")).kvctlBin;
  await withServers(kvctlBin, async (ports) => {
    const onProgress = (sent: number, dv: Divergence | undefined): void => {
      if (dv !== undefined) console.log(showDivergence(dv));
      if (sent % 1000 === 0) console.log(`seed ${seed}: ${sent} requests sent`);
    };
    const onStop = (_sent: number, why: string): void => console.log(`seed ${seed}: ${why}`);
    const r = await runDifferential({ seed, count, etcdPort: ports.etcd[0]!, kvctlPort: ports.kvctl[0]!, etcdPorts: ports.etcd, kvctlPorts: ports.kvctl, maxDivergences: Number(process.env["FUZZ_MAX_DIVERGENCES"] ?? 20), trace: process.env["FUZZ_TRACE"] === "1", onProgress, onStop, ...(wires === undefined || wires.length === 0 ? {} : { wires }) });
    console.log(showFailures(seed, r.failures));
    console.log(`seed ${seed}: ${r.sent} requests, ${r.divergences.length} divergences`);
    process.exitCode = r.divergences.length === 0 && ownFailures(r.failures).length === 0 ? 0 : 1;
  });
}

if (process.argv[1] !== undefined && import.meta.url === `file://${process.argv[1]}`) await main();
