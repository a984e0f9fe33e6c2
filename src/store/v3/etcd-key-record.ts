// One record of etcd 3.4's `key` bucket (mvcc/revision.go, mvcc/kvstore_txn.go), written
// into a caller's buffer: the HashKV sum (hash-kv.ts) and the bbolt snapshot file
// (server/backup/etcd-bolt-writer.ts) must hold the same bytes as etcd's, so both write
// them here.
//
//   key    main revision (8 bytes BE) '_' sub revision (8 bytes BE), then 't' for a deletion
//   value  mvccpb.KeyValue (keyvalue-proto.ts, the encoder gRPC's answers use too), its
//          mod_revision the main revision; a deletion's holds its key only
//
// Sizes first, then writes at an offset, so a caller can place a record in a chunk it
// already holds (HashKV feeds 60,000 of them to the crc32c without one allocation each)
// or allocate it exactly once.
import type { KeyValueFields } from "./keyvalue-proto.ts";

export { keyValueBytes, writeKeyValue } from "./keyvalue-proto.ts";

/** What a record's value is made of besides its revision (mod_revision is the main revision). */
export type KeyRecordFields = KeyValueFields;

/** A revision key's length: 17 bytes, one more for a deletion's 't'. */
export const revisionKeyBytes = (tombstone: boolean): number => (tombstone ? 18 : 17);

/** Writes the revision key at `at`; answers where it ends. */
export function writeRevisionKey(b: Buffer, at: number, main: number, sub: number, tombstone: boolean): number {
  writeU64(b, at, main);
  b[at + 8] = 0x5f; // '_'
  writeU64(b, at + 9, sub);
  if (!tombstone) return at + 17;
  b[at + 17] = 0x74; // 't'
  return at + 18;
}

/** A revision (a safe integer, below 2^53) as a big-endian u64, by 32-bit halves. */
function writeU64(b: Buffer, at: number, n: number): void {
  const hi = Math.floor(n / 0x1_0000_0000);
  b.writeUInt32BE(hi, at);
  b.writeUInt32BE(n - hi * 0x1_0000_0000, at + 4);
}
