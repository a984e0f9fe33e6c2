// The not-yet-persisted tail of the log (etcd's log_unstable.go): entries and possibly
// an incoming snapshot that the server has not yet written to Storage. They leave this
// structure through Ready.entries / Ready.snapshot and are dropped on advance().

import { invariant } from "./errors.ts";
import type { Entry, RaftLogger, Snapshot } from "./types.ts";

/**
 * Invariant: entries[i] has log index offset + i.
 * Invariant: if snapshot is set, offset === snapshot.metadata.index + 1 until the
 * first stableTo after a restore (entries then start right after the snapshot).
 * Note: offset may be lower than Storage's last index: the next persist then truncates
 * Storage's conflicting suffix before appending.
 */
export class Unstable {
  snapshot: Snapshot | undefined = undefined;
  entries: Entry[] = [];
  offset: number;
  readonly logger: RaftLogger;

  constructor(offset: number, logger: RaftLogger) {
    this.offset = offset;
    this.logger = logger;
  }

  /** Index of the first entry after the unstable snapshot, if there is one. */
  maybeFirstIndex(): number | undefined {
    return this.snapshot === undefined ? undefined : this.snapshot.metadata.index + 1;
  }

  /** Last index held here (entries, else snapshot), if any. */
  maybeLastIndex(): number | undefined {
    if (this.entries.length !== 0) return this.offset + this.entries.length - 1;
    if (this.snapshot !== undefined) return this.snapshot.metadata.index;
    return undefined;
  }

  /** Term of entry i if this structure knows it. */
  maybeTerm(i: number): number | undefined {
    if (i < this.offset) {
      if (this.snapshot !== undefined && this.snapshot.metadata.index === i) return this.snapshot.metadata.term;
      return undefined;
    }
    const last = this.maybeLastIndex();
    if (last === undefined || i > last) return undefined;
    return this.entries[i - this.offset]!.term;
  }

  /**
   * The server persisted entries up to i (with term t). Only drop them if the term
   * still matches: a later truncation may have replaced that entry since the Ready.
   */
  stableTo(i: number, t: number): void {
    const gt = this.maybeTerm(i);
    if (gt === undefined) return;
    // i < offset means the term matched the snapshot: nothing unstable to drop.
    if (gt === t && i >= this.offset) {
      this.entries = this.entries.slice(i + 1 - this.offset);
      this.offset = i + 1;
    }
  }

  stableSnapTo(i: number): void {
    if (this.snapshot !== undefined && this.snapshot.metadata.index === i) this.snapshot = undefined;
  }

  restore(s: Snapshot): void {
    this.offset = s.metadata.index + 1;
    this.entries = [];
    this.snapshot = s;
  }

  /**
   * Appends ents, first truncating whatever they overwrite. Arrays are replaced, never
   * mutated in place, because earlier Readies may still hold the old arrays.
   */
  truncateAndAppend(ents: Entry[]): void {
    const after = ents[0]!.index;
    if (after === this.offset + this.entries.length) {
      // Directly after our last entry.
      this.entries = this.entries.concat(ents);
    } else if (after <= this.offset) {
      // Replaces everything unstable (and truncates storage's tail on next persist).
      this.logger.info(`replace the unstable entries from index ${after}`);
      this.offset = after;
      this.entries = ents.slice();
    } else {
      this.logger.info(`truncate the unstable entries before index ${after}`);
      this.entries = this.slice(this.offset, after).concat(ents);
    }
  }

  /** Entries [lo, hi) — a copy. */
  slice(lo: number, hi: number): Entry[] {
    this.mustCheckOutOfBounds(lo, hi);
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }

  private mustCheckOutOfBounds(lo: number, hi: number): void {
    invariant(lo <= hi, () => `invalid unstable.slice ${lo} > ${hi}`);
    const upper = this.offset + this.entries.length;
    invariant(
      lo >= this.offset && hi <= upper,
      () => `unstable.slice[${lo},${hi}) out of bound [${this.offset},${upper}]`,
    );
  }
}
