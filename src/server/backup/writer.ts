// Writes a backup file (format.ts) from the parts of one moment, a buffer of at most a few
// MiB at a time, and answers its size (the body with its padding; the sha256 is sent after
// it by the stream that serves the file, as etcd appends it to its snapshot stream).
import { open } from "node:fs/promises";
import type { AlarmMember, LeaseRecord } from "../../store/v3/index.ts";
import { MAGIC, MAX_SECTION_BYTES, SECTION, padding, sectionHead, type BackupHeader, type SectionType } from "./format.ts";

export interface BackupParts {
  header: BackupHeader;
  /** The raft snapshot's bytes (snapshot-data.ts), in pieces of any size. */
  image: Iterable<Buffer>;
  /** [revision key, encoded record] pairs in revision order (the backend's own bytes). */
  records: Iterable<[Uint8Array, Uint8Array]>;
  leases: LeaseRecord[];
  alarms: AlarmMember[];
}

const FLUSH_BYTES = 4 * 1024 * 1024;

export async function writeBackupBody(path: string, parts: BackupParts): Promise<number> {
  const fh = await open(path, "w", 0o600);
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let written = 0;
  const push = (b: Buffer): void => {
    pending.push(b);
    pendingBytes += b.length;
  };
  const flush = async (): Promise<void> => {
    if (pendingBytes === 0) return;
    const out = Buffer.concat(pending, pendingBytes);
    pending = [];
    pendingBytes = 0;
    await fh.write(out);
    written += out.length;
  };
  const section = async (type: SectionType, payload: Buffer): Promise<void> => {
    push(sectionHead(type, payload.length));
    push(payload);
    if (pendingBytes >= FLUSH_BYTES) await flush();
  };
  try {
    push(MAGIC);
    await section(SECTION.HEADER, Buffer.from(JSON.stringify(parts.header)));
    for (const piece of parts.image) {
      for (let at = 0; at < piece.length; at += MAX_SECTION_BYTES) await section(SECTION.IMAGE, piece.subarray(at, at + MAX_SECTION_BYTES));
    }
    let batch: Buffer[] = [];
    let batchBytes = 0;
    for (const [k, v] of parts.records) {
      const len = Buffer.allocUnsafe(4);
      len.writeUInt32BE(v.length);
      const entry = Buffer.concat([k, len, v]);
      if (batchBytes + entry.length > MAX_SECTION_BYTES && batch.length > 0) {
        await section(SECTION.RECORDS, Buffer.concat(batch, batchBytes));
        batch = [];
        batchBytes = 0;
      }
      batch.push(entry);
      batchBytes += entry.length;
    }
    if (batch.length > 0) await section(SECTION.RECORDS, Buffer.concat(batch, batchBytes));
    // A persisted lease checkpoint travels too, as etcd's lease bucket carries it.
    const leases = parts.leases.map((l) => ({ id: l.id.toString(), ttl: l.ttl, expiry: l.expiry, ...(l.remainingTtl === undefined ? {} : { remainingTtl: l.remainingTtl }) }));
    await section(SECTION.LEASES, Buffer.from(JSON.stringify(leases)));
    await section(SECTION.ALARMS, Buffer.from(JSON.stringify(parts.alarms)));
    await section(SECTION.END, Buffer.alloc(0));
    await flush();
    const pad = padding(written);
    if (pad.length > 0) {
      await fh.write(pad);
      written += pad.length;
    }
    await fh.sync();
    return written;
  } finally {
    await fh.close();
  }
}
