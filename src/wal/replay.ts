// Turns decoded records, segment after segment, into what Wal.open returns. Pure.
import { WalCorruptError, WalError, WalErrorCode } from "./errors.ts";
import type { ScanResult } from "./decoder.ts";
import { RecordType, parseEntry, parseEntryIndex, parseEntryTerm, parseHardState, parseSnapshotRef } from "./record.ts";
import type { HardState, RetainData, SnapshotRef, WalEntry } from "./record.ts";

export interface ReplayResult {
  metadata: Uint8Array;
  hardState: HardState;
  /** Entries with index > snapshot.index, contiguous from snapshot.index + 1. */
  entries: WalEntry[];
  /** Index of the last entry of the log (or the snapshot index when no entry follows it). */
  lastIndex: number;
  /** False when no snapshot ref for snapshot.index was found (accepted, see README). */
  snapshotMatched: boolean;
}

/**
 * Feeds records in log order. Invariant: `#entries[i].index === snapshot.index + 1 + i`;
 * an entry at an index already held truncates the tail from there (raft log truncation).
 */
export class Replayer {
  readonly #snap: SnapshotRef;
  #metadata: Buffer | null = null;
  #hardState: HardState = { term: 0, vote: 0, commit: 0 };
  #entries: WalEntry[] = [];
  #matched = false;
  /** Term of the last entry seen AT the snapshot index, to check a snapshot without a ref. */
  #snapEntryTerm: number | null = null;

  readonly #retain: RetainData | undefined;

  constructor(snapshot: SnapshotRef, retain?: RetainData) {
    this.#snap = snapshot;
    this.#retain = retain;
    if (snapshot.index === 0 && snapshot.term === 0) this.#matched = true;
  }

  segment(buf: Buffer, scan: ScanResult, file: string): void {
    for (const r of scan.records) {
      switch (r.type) {
        case RecordType.Metadata: {
          const md = buf.subarray(r.payloadStart, r.payloadEnd);
          if (this.#metadata === null) this.#metadata = Buffer.from(md);
          else if (!this.#metadata.equals(md)) {
            throw new WalError(WalErrorCode.MetadataConflict, `Cannot read WAL: metadata in ${file} at offset ${r.offset} differs from the first segment's`);
          }
          break;
        }
        case RecordType.Entry: {
          // The segment holding the snapshot index starts with the entries the snapshot
          // covers (100k of them after a snapshot at 100k): only their index and term count,
          // so their data is not copied out.
          const index = parseEntryIndex(buf, r.payloadStart);
          if (index <= this.#snap.index) this.#covered(index, parseEntryTerm(buf, r.payloadStart));
          else this.#entry(parseEntry(buf, r.payloadStart, r.payloadEnd, this.#retain), file, r.offset);
          break;
        }
        case RecordType.HardState:
          this.#hardState = parseHardState(buf, r.payloadStart);
          break;
        case RecordType.SnapshotRef: {
          const ref = parseSnapshotRef(buf, r.payloadStart);
          if (ref.index === this.#snap.index) {
            if (ref.term !== this.#snap.term) {
              throw new WalError(WalErrorCode.SnapshotMismatch, `Cannot open WAL: snapshot ref at index ${ref.index} has term ${ref.term}, the snapshot has term ${this.#snap.term} (${file} offset ${r.offset})`);
            }
            this.#matched = true;
          }
          break;
        }
        case RecordType.Crc:
          break;
      }
    }
  }

  /** An entry at or below the snapshot index. */
  #covered(index: number, term: number): void {
    // An append at or below the snapshot truncates everything after it, as raft does.
    this.#entries.length = 0;
    // An append below the snapshot index also truncates any entry seen at it.
    this.#snapEntryTerm = index === this.#snap.index ? term : null;
  }

  /** An entry above the snapshot index. */
  #entry(e: WalEntry, file: string, offset: number): void {
    const base = this.#snap.index;
    const pos = e.index - base - 1;
    if (pos > this.#entries.length) {
      const have = base + this.#entries.length;
      throw new WalCorruptError({ file, offset, detail: `entry index ${e.index} leaves a gap after index ${have}` });
    }
    this.#entries.length = pos;
    this.#entries.push(e);
  }

  finish(): ReplayResult {
    if (this.#metadata === null) {
      throw new WalError(WalErrorCode.Corrupt, "Cannot open WAL: no metadata record found");
    }
    if (!this.#matched && this.#snapEntryTerm !== null && this.#snapEntryTerm !== this.#snap.term) {
      throw new WalError(WalErrorCode.SnapshotMismatch, `Cannot open WAL: entry at snapshot index ${this.#snap.index} has term ${this.#snapEntryTerm}, the snapshot has term ${this.#snap.term}`);
    }
    const last = this.#entries.at(-1);
    return {
      metadata: this.#metadata,
      hardState: this.#hardState,
      entries: this.#entries,
      lastIndex: last ? last.index : this.#snap.index,
      snapshotMatched: this.#matched,
    };
  }
}
