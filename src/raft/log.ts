// The Raft log as the core sees it (etcd's log.go): Storage (stable prefix) followed by
// Unstable (tail not yet persisted), plus the committed and applied cursors.

import { CompactedError, RaftInvariantError, UnavailableError, invariant } from "./errors.ts";
import { Unstable } from "./log-unstable.ts";
import type { Storage } from "./storage.ts";
import type { Entry, RaftLogger, Snapshot } from "./types.ts";
import { limitSize } from "./util.ts";

export class RaftLog {
  /** All stable entries since the last snapshot. */
  readonly storage: Storage;
  /** Entries and snapshot the server has not persisted yet. */
  readonly unstable: Unstable;
  /**
   * Highest index known to be stored on a quorum.
   * Invariant: committed <= lastIndex(); committed never decreases.
   */
  committed: number;
  /**
   * Highest index the server has been told to apply (through a Ready it advanced).
   * Invariant: applied <= committed.
   */
  applied: number;
  readonly logger: RaftLogger;
  /** Cap on the byte size of committed entries handed out per Ready. */
  readonly maxNextEntsSize: number;

  constructor(storage: Storage, logger: RaftLogger, maxNextEntsSize = Number.POSITIVE_INFINITY) {
    this.storage = storage;
    this.logger = logger;
    this.maxNextEntsSize = maxNextEntsSize;
    const firstIndex = storage.firstIndex();
    const lastIndex = storage.lastIndex();
    this.unstable = new Unstable(lastIndex + 1, logger);
    // Everything up to the last compaction is committed and applied by definition.
    this.committed = firstIndex - 1;
    this.applied = firstIndex - 1;
  }

  toString(): string {
    return `committed=${this.committed}, applied=${this.applied}, unstable.offset=${this.unstable.offset}, len(unstable.Entries)=${this.unstable.entries.length}`;
  }

  /**
   * Appends the leader's entries if (index, logTerm) matches our log (§5.3 consistency
   * check). Returns the last index of the new entries, or undefined on mismatch.
   */
  maybeAppend(index: number, logTerm: number, committed: number, ents: Entry[]): number | undefined {
    if (!this.matchTerm(index, logTerm)) return undefined;
    const lastNewI = index + ents.length;
    const ci = this.findConflict(ents);
    if (ci !== 0) {
      invariant(ci > this.committed, () => `entry ${ci} conflict with committed entry [committed(${this.committed})]`);
      this.append(ents.slice(ci - (index + 1)));
    }
    // Only up to what the leader's message proves we hold: the rest of our log may
    // still diverge from the leader's beyond lastNewI.
    this.commitTo(Math.min(committed, lastNewI));
    return lastNewI;
  }

  append(ents: Entry[]): number {
    if (ents.length === 0) return this.lastIndex();
    const after = ents[0]!.index - 1;
    invariant(after >= this.committed, () => `after(${after}) is out of range [committed(${this.committed})]`);
    this.unstable.truncateAndAppend(ents);
    return this.lastIndex();
  }

  /**
   * Index of the first entry of ents that conflicts with (same index, other term) or
   * extends our log; 0 when all of ents is already present.
   */
  findConflict(ents: Entry[]): number {
    for (const ne of ents) {
      if (!this.matchTerm(ne.index, ne.term)) {
        if (ne.index <= this.lastIndex()) {
          this.logger.info(
            `found conflict at index ${ne.index} [existing term: ${this.zeroTermOnErrCompacted(ne.index)}, conflicting term: ${ne.term}]`,
          );
        }
        return ne.index;
      }
    }
    return 0;
  }

  unstableEntries(): Entry[] {
    return this.unstable.entries.length === 0 ? [] : this.unstable.entries.slice();
  }

  /** Committed entries not yet handed out for applying (size-limited). */
  nextEnts(): Entry[] {
    const off = Math.max(this.applied + 1, this.firstIndex());
    if (this.committed + 1 > off) return this.slice(off, this.committed + 1, this.maxNextEntsSize);
    return [];
  }

  hasNextEnts(): boolean {
    return this.committed + 1 > Math.max(this.applied + 1, this.firstIndex());
  }

  /** The snapshot to send a lagging follower: the unstable one if any, else Storage's. */
  snapshot(): Snapshot {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }

  firstIndex(): number {
    return this.unstable.maybeFirstIndex() ?? this.storage.firstIndex();
  }

  lastIndex(): number {
    return this.unstable.maybeLastIndex() ?? this.storage.lastIndex();
  }

  commitTo(toCommit: number): void {
    // Never decrease commit.
    if (this.committed < toCommit) {
      invariant(
        this.lastIndex() >= toCommit,
        () =>
          `tocommit(${toCommit}) is out of range [lastIndex(${this.lastIndex()})]. Was the raft log corrupted, truncated, or lost?`,
      );
      this.committed = toCommit;
    }
  }

  appliedTo(i: number): void {
    if (i === 0) return;
    invariant(
      this.committed >= i && i >= this.applied,
      () => `applied(${i}) is out of range [prevApplied(${this.applied}), committed(${this.committed})]`,
    );
    this.applied = i;
  }

  stableTo(i: number, t: number): void {
    this.unstable.stableTo(i, t);
  }

  stableSnapTo(i: number): void {
    this.unstable.stableSnapTo(i);
  }

  lastTerm(): number {
    const t = this.term(this.lastIndex());
    invariant(t !== undefined, () => "unexpected error when getting the last term");
    return t;
  }

  /**
   * Term of entry i; 0 outside [firstIndex()-1, lastIndex()]; undefined when storage
   * says it is compacted or unavailable (etcd returns ErrCompacted / ErrUnavailable).
   */
  term(i: number): number | undefined {
    const dummyIndex = this.firstIndex() - 1;
    if (i < dummyIndex || i > this.lastIndex()) return 0;
    const ut = this.unstable.maybeTerm(i);
    if (ut !== undefined) return ut;
    try {
      return this.storage.term(i);
    } catch (err) {
      if (err instanceof CompactedError || err instanceof UnavailableError) return undefined;
      throw err;
    }
  }

  /** Entries from i to the end, size-limited. Throws CompactedError if i is compacted. */
  entries(i: number, maxSize: number): Entry[] {
    if (i > this.lastIndex()) return [];
    return this.slice(i, this.lastIndex() + 1, maxSize);
  }

  allEntries(): Entry[] {
    return this.entries(this.firstIndex(), Number.POSITIVE_INFINITY);
  }

  /**
   * §5.4.1: a candidate's log (lastIndex, term) is at least as up to date as ours if its
   * last term is higher, or equal with an index at least ours.
   */
  isUpToDate(lasti: number, term: number): boolean {
    const lt = this.lastTerm();
    return term > lt || (term === lt && lasti >= this.lastIndex());
  }

  matchTerm(i: number, term: number): boolean {
    const t = this.term(i);
    return t !== undefined && t === term;
  }

  /**
   * §5.4.2: the leader only commits by counting replicas an entry of its current term;
   * earlier entries then commit indirectly.
   */
  maybeCommit(maxIndex: number, term: number): boolean {
    if (maxIndex > this.committed && this.zeroTermOnErrCompacted(maxIndex) === term) {
      this.commitTo(maxIndex);
      return true;
    }
    return false;
  }

  restore(s: Snapshot): void {
    this.logger.info(`log [${this.toString()}] starts to restore snapshot [index: ${s.metadata.index}, term: ${s.metadata.term}]`);
    this.committed = s.metadata.index;
    this.unstable.restore(s);
  }

  /** Entries [lo, hi), size-limited. Throws CompactedError if lo is compacted. */
  slice(lo: number, hi: number, maxSize: number): Entry[] {
    this.mustCheckOutOfBounds(lo, hi);
    if (lo === hi) return [];
    let ents: Entry[] = [];
    const uOffset = this.unstable.offset;
    if (lo < uOffset) {
      let stored: Entry[];
      try {
        stored = this.storage.entries(lo, Math.min(hi, uOffset), maxSize);
      } catch (err) {
        if (err instanceof UnavailableError) {
          throw new RaftInvariantError(`entries[${lo}:${Math.min(hi, uOffset)}) is unavailable from storage`);
        }
        throw err; // CompactedError propagates to the caller, which sends a snapshot.
      }
      // Storage stopped early because of the size limit: done.
      if (stored.length < Math.min(hi, uOffset) - lo) return stored;
      ents = stored;
    }
    if (hi > uOffset) {
      const u = this.unstable.slice(Math.max(lo, uOffset), hi);
      ents = ents.length > 0 ? ents.concat(u) : u;
    }
    return limitSize(ents, maxSize);
  }

  /** Throws CompactedError if lo < firstIndex; panics if [lo, hi) leaves the log. */
  private mustCheckOutOfBounds(lo: number, hi: number): void {
    invariant(lo <= hi, () => `invalid slice ${lo} > ${hi}`);
    const fi = this.firstIndex();
    if (lo < fi) throw new CompactedError();
    invariant(hi <= this.lastIndex() + 1, () => `slice[${lo},${hi}) out of bound [${fi},${this.lastIndex()}]`);
  }

  /** Term of entry i, with 0 for a compacted index. Anything else unknown is fatal. */
  zeroTermOnErrCompacted(i: number): number {
    const dummyIndex = this.firstIndex() - 1;
    if (i < dummyIndex || i > this.lastIndex()) return 0;
    const ut = this.unstable.maybeTerm(i);
    if (ut !== undefined) return ut;
    try {
      return this.storage.term(i);
    } catch (err) {
      if (err instanceof CompactedError) return 0;
      throw err;
    }
  }
}
