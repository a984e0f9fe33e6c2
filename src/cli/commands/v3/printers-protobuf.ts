// etcdctl v3's `-w protobuf` (printer_protobuf.go): the response message as gogo/protobuf
// marshals it, written raw to stdout. The gateway's JSON answer carries every non-zero
// field, so writing it back in field-number order with zeros left out gives the bytes
// etcdctl prints for the same server answer. Pure functions.
//
// What etcdctl does per command, reproduced here:
// - kv, txn, watch, member add|remove|update|list, alarm, move-leader, user and role
//   commands: the etcdserverpb message (watch: a WatchResponse of the header, which is
//   always written, the events, compact revision, canceled and created);
// - lease grant, keep-alive, timetolive, list: clientv3's structs, whose only Marshal is
//   the embedded *ResponseHeader's, so the header's own bytes;
// - lease revoke: clientv3.LeaseRevokeResponse has no Marshal: exit 4 with Go's %v of it;
// - member promote, endpoint health|status|hashkv, snapshot status: not supported (exit 4).

import { ProtoWriter } from "../../../client/proto-wire.ts";
import { unb64, type WireDeleteRangeResponse, type WireEvent, type WireHeader, type WireKeyValue, type WirePermission, type WirePutResponse, type WireRangeResponse, type WireTxnResponse, type WireWatchResponse } from "../../../client/v3-types.ts";

export function pbHeader(h: WireHeader | undefined): ProtoWriter {
  return new ProtoWriter().int(1, h?.cluster_id).int(2, h?.member_id).int(3, h?.revision).int(4, h?.raft_term);
}

const headerField = (w: ProtoWriter, h: WireHeader | undefined): ProtoWriter => w.message(1, h === undefined ? undefined : pbHeader(h));

function pbKv(kv: WireKeyValue): ProtoWriter {
  return new ProtoWriter()
    .bytes(1, unb64(kv.key))
    .int(2, kv.create_revision)
    .int(3, kv.mod_revision)
    .int(4, kv.version)
    .bytes(5, unb64(kv.value))
    .int(6, kv.lease);
}

function pbRange(r: WireRangeResponse): ProtoWriter {
  const w = headerField(new ProtoWriter(), r.header);
  for (const kv of r.kvs ?? []) w.message(2, pbKv(kv));
  return w.bool(3, r.more).int(4, r.count);
}

const pbPut = (r: WirePutResponse): ProtoWriter => headerField(new ProtoWriter(), r.header).message(2, r.prev_kv === undefined ? undefined : pbKv(r.prev_kv));

function pbDel(r: WireDeleteRangeResponse): ProtoWriter {
  const w = headerField(new ProtoWriter(), r.header).int(2, r.deleted);
  for (const kv of r.prev_kvs ?? []) w.message(3, pbKv(kv));
  return w;
}

function pbTxn(r: WireTxnResponse): ProtoWriter {
  const w = headerField(new ProtoWriter(), r.header).bool(2, r.succeeded);
  for (const op of r.responses ?? []) {
    const o = new ProtoWriter();
    // A set oneof is written even when its message is empty.
    if (op.response_range !== undefined) o.message(1, pbRange(op.response_range));
    else if (op.response_put !== undefined) o.message(2, pbPut(op.response_put));
    else if (op.response_delete_range !== undefined) o.message(3, pbDel(op.response_delete_range));
    else if (op.response_txn !== undefined) o.message(4, pbTxn(op.response_txn));
    w.message(3, o);
  }
  return w;
}

const eventType = (e: WireEvent): number => (e.type === "DELETE" || e.type === 1 ? 1 : 0);

function pbWatch(r: WireWatchResponse): ProtoWriter {
  const w = new ProtoWriter().message(1, pbHeader(r.header)).bool(3, r.created).bool(4, r.canceled).int(5, r.compact_revision);
  for (const e of r.events ?? []) {
    w.message(11, new ProtoWriter().int(1, eventType(e)).message(2, e.kv === undefined ? undefined : pbKv(e.kv)).message(3, e.prev_kv === undefined ? undefined : pbKv(e.prev_kv)));
  }
  return w;
}

export const protobufRange = (r: WireRangeResponse): Buffer => pbRange(r).finish();
export const protobufPut = (r: WirePutResponse): Buffer => pbPut(r).finish();
export const protobufDel = (r: WireDeleteRangeResponse): Buffer => pbDel(r).finish();
export const protobufTxn = (r: WireTxnResponse): Buffer => pbTxn(r).finish();
export const protobufWatch = (r: WireWatchResponse): Buffer => pbWatch(r).finish();

/** A response that is only a header (auth changes, move-leader, role/user add …). */
export const protobufHeaderOnly = (r: { header?: WireHeader }): Buffer => headerField(new ProtoWriter(), r.header).finish();

/** Lease responses: clientv3's structs marshal as their embedded header alone. */
export const protobufBareHeader = (r: { header?: WireHeader }): Buffer => pbHeader(r.header).finish();

/** A header followed by a repeated string field 2 (user list, role list, user get's roles). */
export function protobufStrings(r: { header?: WireHeader }, list: readonly string[] | undefined): Buffer {
  const w = headerField(new ProtoWriter(), r.header);
  for (const s of list ?? []) w.bytesElement(2, s);
  return w.finish();
}

export function protobufRoleGet(r: { header?: WireHeader; perm?: WirePermission[] }, permNumber: (p: WirePermission) => number): Buffer {
  const w = headerField(new ProtoWriter(), r.header);
  for (const p of r.perm ?? []) w.message(2, new ProtoWriter().int(1, permNumber(p)).bytes(2, unb64(p.key)).bytes(3, unb64(p.range_end)));
  return w.finish();
}

export interface PbMember {
  ID?: string | number;
  name?: string;
  peerURLs?: string[];
  clientURLs?: string[];
  isLearner?: boolean;
}

function pbMember(m: PbMember): ProtoWriter {
  const w = new ProtoWriter().int(1, m.ID).bytes(2, m.name);
  for (const u of m.peerURLs ?? []) w.bytesElement(3, u);
  for (const u of m.clientURLs ?? []) w.bytesElement(4, u);
  return w.bool(5, m.isLearner);
}

/** MemberAddResponse (member = the new one) or the Remove/Update/List responses (no member). */
export function protobufMembers(r: { header?: WireHeader; member?: PbMember; members?: PbMember[] }, withMember: boolean): Buffer {
  const w = headerField(new ProtoWriter(), r.header);
  if (withMember) {
    w.message(2, r.member === undefined ? undefined : pbMember(r.member));
    for (const m of r.members ?? []) w.message(3, pbMember(m));
  } else {
    for (const m of r.members ?? []) w.message(2, pbMember(m));
  }
  return w.finish();
}

export function protobufAlarms(r: { header?: WireHeader; alarms?: { memberID?: string | number }[] }, alarmNumber: (a: { memberID?: string | number }) => number): Buffer {
  const w = headerField(new ProtoWriter(), r.header);
  for (const a of r.alarms ?? []) w.message(2, new ProtoWriter().int(1, a.memberID).int(2, alarmNumber(a)));
  return w.finish();
}

/** gogoproto's compact text of a header (`%v` of a *ResponseHeader): non-zero fields, each followed by a space. */
export function headerText(h: WireHeader | undefined): string {
  if (h === undefined) return "<nil>";
  const z = (v: unknown): boolean => v === undefined || v === "" || v === "0" || v === 0;
  let out = "";
  if (!z(h.cluster_id)) out += `cluster_id:${String(h.cluster_id)} `;
  if (!z(h.member_id)) out += `member_id:${String(h.member_id)} `;
  if (!z(h.revision)) out += `revision:${String(h.revision)} `;
  if (!z(h.raft_term)) out += `raft_term:${String(h.raft_term)} `;
  return out;
}
