// The file `kvctl v3 snapshot save` writes: the whole replicated state of one moment (the
// v2 store, membership, v2 and v3 auth, and the v3 key space with its leases and alarms),
// unlike etcd's, whose v3 snapshot drops the v2 key space. Made and read as a stream: no
// step holds the whole state in one buffer.
//
//   magic "KVCTLSNAPSHOT01\n"
//   sections: type:u8 length:u32 BE payload
//     HEADER  JSON  BackupHeader
//     IMAGE         the raft snapshot's bytes (v2 store, membership, auth, v3 auth; snapshot-data.ts), in pieces
//                   of at most 1 MiB (concatenated they are the bytes)
//     RECORDS       records of the v3 key space as the backend keeps them, repeated:
//                   revisionKey (16 bytes) valueLength:u32 value
//     LEASES  JSON  [{ id (decimal), ttl, expiry }]
//     ALARMS  JSON  [{ memberId, alarm }]
//     END           (empty)
//   zero padding to a multiple of 512 bytes, then the sha256 of all that (32 bytes)
//
// The size rule and the trailing sha256 are etcd's: `etcdctl snapshot save` checks both.

export const MAGIC = Buffer.from("KVCTLSNAPSHOT01\n");
export const SECTION = { HEADER: 1, IMAGE: 2, RECORDS: 3, LEASES: 4, ALARMS: 5, END: 6 } as const;
export type SectionType = (typeof SECTION)[keyof typeof SECTION];
export const SHA256_BYTES = 32;
export const ALIGN_BYTES = 512;
/** Largest payload of one section (the writer cuts larger parts). */
export const MAX_SECTION_BYTES = 1024 * 1024;

export interface BackupHeader {
  format: "kvctl-snapshot/1";
  /** The raft index whose state this is. */
  index: number;
  term: number;
  /** The v3 key space's revision and compaction point (-1: never compacted). */
  revision: number;
  compactRevision: number;
  /** Live v3 keys, and records kept (etcdctl's totalKey counts the backend's keys). */
  totalKeys: number;
  /** ms since the epoch. */
  time: number;
}

export function sectionHead(type: SectionType, length: number): Buffer {
  const b = Buffer.allocUnsafe(5);
  b.writeUInt8(type, 0);
  b.writeUInt32BE(length, 1);
  return b;
}

/** Zero bytes that bring `length` to a multiple of ALIGN_BYTES. */
export function padding(length: number): Buffer {
  const rest = length % ALIGN_BYTES;
  return Buffer.alloc(rest === 0 ? 0 : ALIGN_BYTES - rest);
}

export class BackupFormatError extends Error {
  override name = "BackupFormatError";
}
