// Small pure helpers shared by the core: entry sizes (for message / Ready pagination),
// the ConfChange codec, and human-readable descriptions for logs and test failures.

import { RaftInvariantError } from "./errors.ts";
import {
  type ConfChange,
  type ConfChangeType,
  type Entry,
  type Message,
  EntryType,
  messageTypeName,
} from "./types.ts";

/**
 * Sorts numbers ascending in place and returns the array. The member-id and match-index
 * lists sorted on every commit and broadcast hold a handful of numbers; there an insertion
 * sort runs 3-5x faster than Array.prototype.sort with a comparator and allocates nothing
 * (measured on 3 elements: 2M sorts cost 2,028 minor GCs with sort(), 27 with this).
 */
export function sortNumbers(a: number[]): number[] {
  for (let i = 1; i < a.length; i++) {
    const v = a[i]!;
    let j = i - 1;
    while (j >= 0 && a[j]! > v) {
      a[j + 1] = a[j]!;
      j--;
    }
    a[j + 1] = v;
  }
  return a;
}

/** Bytes a protobuf varint takes for a non-negative safe integer. */
function varintLen(n: number): number {
  let len = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

/**
 * Size of the entry as etcd's raftpb.Entry.Size() computes it (protobuf encoding), so
 * that maxSizePerMsg means what it means for etcd.
 */
export function entrySize(e: Entry): number {
  let n = 1 + varintLen(e.term) + 1 + varintLen(e.index) + 1 + varintLen(e.type);
  if (e.data.length > 0) n += 1 + varintLen(e.data.length) + e.data.length;
  return n;
}

/**
 * The longest prefix of `ents` whose total size is <= maxSize, but never less than one
 * entry: a single entry larger than the limit must still be able to move.
 */
export function limitSize(ents: Entry[], maxSize: number): Entry[] {
  if (ents.length === 0) return ents;
  let size = entrySize(ents[0]!);
  let limit = 1;
  for (; limit < ents.length; limit++) {
    size += entrySize(ents[limit]!);
    if (size > maxSize) break;
  }
  return limit === ents.length ? ents : ents.slice(0, limit);
}

// --- ConfChange codec: byte-identical to etcd's raftpb.ConfChange.Marshal(), so a WAL
// --- written by us carries the same conf-change payloads as etcd's.

function putVarint(out: number[], n: number): void {
  while (n >= 128) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
}

export function encodeConfChange(cc: ConfChange): Uint8Array {
  const out: number[] = [];
  out.push(0x08);
  putVarint(out, cc.id ?? 0);
  out.push(0x10);
  putVarint(out, cc.type);
  out.push(0x18);
  putVarint(out, cc.nodeId);
  // etcd writes the context only when non-nil; an empty context is indistinguishable
  // from nil in JS, so it is written only when non-empty.
  if (cc.context.length > 0) {
    out.push(0x22);
    putVarint(out, cc.context.length);
    for (const b of cc.context) out.push(b);
  }
  return Uint8Array.from(out);
}

export function decodeConfChange(data: Uint8Array): ConfChange {
  let pos = 0;
  const readVarint = (): number => {
    let result = 0;
    let mul = 1;
    for (;;) {
      if (pos >= data.length) throw new RaftInvariantError("Cannot decode conf change: truncated varint");
      const b = data[pos++]!;
      result += (b & 0x7f) * mul;
      if (b < 0x80) return result;
      mul *= 128;
      if (mul > 2 ** 56) throw new RaftInvariantError("Cannot decode conf change: varint too long");
    }
  };
  const cc: ConfChange = { type: 0, nodeId: 0, context: new Uint8Array(0), id: 0 };
  while (pos < data.length) {
    const key = readVarint();
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (wire === 0) {
      const v = readVarint();
      if (field === 1) cc.id = v;
      else if (field === 2) {
        if (v > 3) throw new RaftInvariantError(`Cannot decode conf change: unknown type ${v}`);
        cc.type = v as ConfChangeType;
      } else if (field === 3) cc.nodeId = v;
    } else if (wire === 2) {
      const len = readVarint();
      if (pos + len > data.length) throw new RaftInvariantError("Cannot decode conf change: truncated bytes");
      if (field === 4) cc.context = data.slice(pos, pos + len);
      pos += len;
    } else {
      throw new RaftInvariantError(`Cannot decode conf change: unsupported wire type ${wire}`);
    }
  }
  return cc;
}

/** Bytes as a map key (read contexts). latin1 is a bijection byte <-> char. */
export function bytesKey(b: Uint8Array): string {
  let s = "";
  for (const x of b) s += String.fromCharCode(x);
  return s;
}

export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// --- Descriptions (etcd's util.go Describe*), for logs and assertion messages.

export function describeEntry(e: Entry): string {
  const kind = e.type === EntryType.ConfChange ? "EntryConfChange" : "EntryNormal";
  let body = "";
  if (e.type === EntryType.ConfChange) {
    const cc = decodeConfChange(e.data);
    body = ` type=${cc.type} node=${cc.nodeId}`;
  } else if (e.data.length > 0) {
    body = ` ${JSON.stringify(bytesKey(e.data))}`;
  }
  return `${e.term}/${e.index} ${kind}${body}`;
}

export function describeMessage(m: Message): string {
  let s = `${m.from}->${m.to} ${messageTypeName(m.type)} Term:${m.term} Log:${m.logTerm}/${m.index}`;
  if (m.reject) s += ` Rejected (Hint: ${m.rejectHint})`;
  if (m.commit !== 0) s += ` Commit:${m.commit}`;
  if (m.entries.length > 0) s += ` Entries:[${m.entries.map(describeEntry).join(", ")}]`;
  if (m.snapshot !== undefined && m.snapshot.metadata.index !== 0) {
    s += ` Snapshot: Index:${m.snapshot.metadata.index} Term:${m.snapshot.metadata.term}`;
  }
  return s;
}
