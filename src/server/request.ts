// What goes into the Raft log. Every change to replicated state is one of these commands,
// encoded as JSON bytes in a log entry. Apply must produce the same state from the same
// commands on every member, so a command carries everything apply needs: no clock reads,
// no environment (the proposer stamps `time`, and TTLs travel as absolute expirations).

import type { V2AuthOp } from "../auth/index.ts";
import { parseWithBytes, stringifyWithBytes, type V3Op } from "./v3-command.ts";
import { retainEntryData } from "../raft/index.ts";
import { NO_LEASE, type PutRequest } from "../store/v3/index.ts";

/** A v2 key-space request, after validation at the HTTP edge (etcd's etcdserverpb.Request). */
export interface V2Request {
  method: "PUT" | "POST" | "DELETE" | "QGET";
  path: string;
  val: string;
  dir: boolean;
  prevValue: string;
  prevIndex: number;
  /** Tri-state: absent means "not given", which differs from false. */
  prevExist?: boolean;
  /** Absolute expiry (ms since the epoch; a fraction only in older entries); absent = no TTL given. */
  expiration?: number;
  /**
   * Nanoseconds within expiration's millisecond (1..999999; absent = 0), from the
   * proposer's clock, so that every member prints the `expiration` etcd would.
   */
  expirationNs?: number;
  recursive: boolean;
  sorted: boolean;
  refresh?: boolean;
}

/** Member attributes published by a member after it starts (etcd's publish). */
export interface MemberAttributes {
  id: number;
  name: string;
  clientUrls: string[];
}

/**
 * `m` is the proposing member and `id` its request id: only the proposer waits for the
 * result, so apply triggers a waiter only when `m` is this member. `time` is the
 * proposer's clock when it proposed (ms since the epoch).
 */
export type Command =
  | { t: "v2"; m: number; id: number; time: number; r: V2Request }
  /**
   * The leader's clock, replicated so that TTL expiry is the same on every member.
   * `keysOnly`: it expires v2 TTL keys only; v3 leases end by the revocations the leader
   * proposes (lease-keeper.ts). Entries without it (older logs) also expire the v3 leases
   * whose replicated expiry has passed, and still do when replayed.
   */
  | { t: "sync"; m: number; id: number; time: number; keysOnly?: true }
  | { t: "attr"; m: number; id: number; time: number; a: MemberAttributes }
  /**
   * The cluster version a new leader records when none is (etcd's PUT of /0/version, a v2
   * store write: it spends one v2 index, so a fresh cluster's first key gets etcd's index).
   */
  | { t: "ver"; m: number; id: number; time: number; v: string }
  /** v2 access control: a user/role/enable change; passwords travel only as KDF hashes. */
  | { t: "auth"; m: number; id: number; time: number; op: V2AuthOp }
  /** The v3 key space, leases and v3 access control: bytes and bigints travel tagged. */
  | { t: "v3"; m: number; id: number; time: number; op: V3Op };

/** A command before the server gives it its proposer and id. */
export type CommandBody = Command extends infer C ? (C extends Command ? Omit<C, "m" | "id"> : never) : never;

/** Default values of V2Request fields, left out of the encoded entry (smaller log, less memory). */
const v2Defaults = { val: "", dir: false, prevValue: "", prevIndex: 0, recursive: false, sorted: false } as const;

/**
 * Encodes a command as JSON bytes, kept in the log's own slabs (raft/entry-arena.ts): the
 * in-memory Raft log holds up to --snapshot-count entries, and a separate ArrayBuffer per
 * entry costs more than the entry itself.
 */
export function encodeCommand(c: Command): Uint8Array {
  return retainEntryData(encodeText(c));
}

/**
 * v3 puts, the bulk of a v3 log, in binary (JSON entries start with "{"):
 *
 *   0x01 flags:u8 (prevKv 1, ignoreValue 2, ignoreLease 4, anonymous 8) m:f64 id:f64 time:f64
 *   lease:i64 keyLength:u32 key value
 *
 * A 1 KiB value took 1.45 KiB as JSON with base64, and decoding it was most of an apply;
 * the in-memory log holds up to --snapshot-count entries. "anonymous" is the stamp of a
 * caller without a token (op.a null, judged at apply); an older log's put has neither
 * that flag nor a stamp.
 */
const BINARY_PUT = 0x01;
const PUT_HEAD = 1 + 1 + 8 + 8 + 8 + 8 + 4;

function encodePut(c: { m: number; id: number; time: number }, r: PutRequest, anonymous: boolean): Buffer {
  const out = Buffer.allocUnsafe(PUT_HEAD + r.key.length + r.value.length);
  out[0] = BINARY_PUT;
  out[1] = (r.prevKv ? 1 : 0) | (r.ignoreValue ? 2 : 0) | (r.ignoreLease ? 4 : 0) | (anonymous ? 8 : 0);
  out.writeDoubleBE(c.m, 2);
  out.writeDoubleBE(c.id, 10);
  out.writeDoubleBE(c.time, 18);
  out.writeBigInt64BE(r.lease, 26);
  out.writeUInt32BE(r.key.length, 34);
  r.key.copy(out, PUT_HEAD);
  r.value.copy(out, PUT_HEAD + r.key.length);
  return out;
}

function decodePut(buf: Buffer): Command {
  if (buf.length < PUT_HEAD) throw new Error("Cannot decode log entry: a v3 put cut short");
  const keyLen = buf.readUInt32BE(34);
  if (PUT_HEAD + keyLen > buf.length) throw new Error("Cannot decode log entry: a v3 put's key runs past its end");
  const flags = buf[1]!;
  const lease = buf.readBigInt64BE(26);
  // Views into the entry, not copies: the entry's bytes live in the log's slabs, which a
  // record must not pin, and the key space keeps neither (it copies the value it stores,
  // and holds the key as its index string); a decoded command lives only through apply.
  const r: PutRequest = {
    key: buf.subarray(PUT_HEAD, PUT_HEAD + keyLen),
    value: buf.subarray(PUT_HEAD + keyLen),
    lease: lease === NO_LEASE ? NO_LEASE : lease,
    prevKv: (flags & 1) !== 0,
    ignoreValue: (flags & 2) !== 0,
    ignoreLease: (flags & 4) !== 0,
  };
  const op: V3Op = (flags & 8) !== 0 ? { k: "put", r, a: null } : { k: "put", r };
  return { t: "v3", m: buf.readDoubleBE(2), id: buf.readDoubleBE(10), time: buf.readDoubleBE(18), op };
}

function encodeText(c: Command): Buffer {
  // A put stamped with a named caller travels as JSON: the binary form has room for the anonymous stamp only.
  if (c.t === "v3" && c.op.k === "put" && (c.op.a === undefined || c.op.a === null)) return encodePut(c, c.op.r, c.op.a === null);
  if (c.t === "v3") return Buffer.from(stringifyWithBytes({ t: c.t, m: c.m, id: c.id, time: c.time, op: c.op })); // "t" first: decodeCommand looks for it
  if (c.t !== "v2") return Buffer.from(JSON.stringify(c));
  const r: Partial<V2Request> & Pick<V2Request, "method" | "path"> = { method: c.r.method, path: c.r.path };
  for (const [k, v] of Object.entries(c.r) as Array<[keyof V2Request, unknown]>) {
    if (k === "method" || k === "path" || v === undefined) continue;
    if (k in v2Defaults && v2Defaults[k as keyof typeof v2Defaults] === v) continue;
    (r as Record<string, unknown>)[k] = v;
  }
  return Buffer.from(JSON.stringify({ ...c, r }));
}

/** A v3 key-space command known only by its proposer and id (see peekKeySpaceCommand). */
export interface KeySpaceCommandHead {
  t: "v3-head";
  m: number;
  id: number;
}

const V3_PREFIX = Buffer.from('{"t":"v3","m":');
/** Only v3 auth ops carry this; bytes travel as base64 and cannot contain a quote. */
const AUTH_OP = Buffer.from('"op":{"k":"auth"');
const HEAD_RE = /^\{"t":"v3","m":(\d+),"id":(\d+),/;

/**
 * The proposer and id of a v3 command that changes only the key space (not v3 auth),
 * read from the entry's first bytes without decoding the rest; undefined for any other
 * entry. A replay skips such entries below the database's consistent index, and decoding
 * their values was most of a restart's time.
 */
export function peekKeySpaceCommand(data: Uint8Array): KeySpaceCommandHead | undefined {
  const buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (buf[0] === BINARY_PUT && buf.length >= PUT_HEAD) return { t: "v3-head", m: buf.readDoubleBE(2), id: buf.readDoubleBE(10) };
  if (buf.length < V3_PREFIX.length || buf.compare(V3_PREFIX, 0, V3_PREFIX.length, 0, V3_PREFIX.length) !== 0) return undefined;
  if (buf.indexOf(AUTH_OP) >= 0) return undefined;
  const m = HEAD_RE.exec(buf.toString("latin1", 0, Math.min(buf.length, 64)));
  return m === null ? undefined : { t: "v3-head", m: Number(m[1]), id: Number(m[2]) };
}

export function decodeCommand(data: Uint8Array): Command {
  const buf = Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (buf[0] === BINARY_PUT) return decodePut(buf);
  const text = buf.toString("utf8");
  // Only v3 commands carry tagged bytes; the plain parser is faster for the rest.
  const parsed: unknown = text.startsWith('{"t":"v3"') ? parseWithBytes(text) : JSON.parse(text);
  if (typeof parsed !== "object" || parsed === null || !("t" in parsed) || !("id" in parsed)) {
    // A log entry we cannot read means the log is not ours or is corrupt: stop, never guess.
    throw new Error("Cannot decode log entry: not a kvctl command");
  }
  const c = parsed as Command;
  if (c.t === "v2") c.r = withDefaults(c.r);
  return c;
}

/**
 * The request with every default field present. Built in one fixed shape and then
 * overwritten with what the entry carries: `{ ...v2Defaults, ...r }` cost 2.5-3.5 us per
 * entry (two spreads take V8's slow path), more than the JSON.parse, and every member
 * decodes every entry (on a write's path, and 100k times on a restart's replay).
 */
function withDefaults(r: V2Request): V2Request {
  const out: V2Request = {
    method: r.method,
    path: r.path,
    val: v2Defaults.val,
    dir: v2Defaults.dir,
    prevValue: v2Defaults.prevValue,
    prevIndex: v2Defaults.prevIndex,
    recursive: v2Defaults.recursive,
    sorted: v2Defaults.sorted,
  };
  const fields = out as unknown as Record<string, unknown>;
  for (const k in r) fields[k] = (r as unknown as Record<string, unknown>)[k];
  return out;
}
