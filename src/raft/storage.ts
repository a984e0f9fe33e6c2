// Storage: what the core reads back of the stable log (etcd's storage.go). The server
// writes to it (append, setHardState, applySnapshot) while handling a Ready; the core
// only reads. MemoryStorage is the reference implementation and the one the server
// uses in front of its WAL, exactly as etcd's server does.

import { CompactedError, RaftInvariantError, SnapOutOfDateError, UnavailableError } from "./errors.ts";
import type { ConfState, Entry, HardState, Snapshot } from "./types.ts";
import { emptySnapshot } from "./types.ts";
import { limitSize } from "./util.ts";

export interface InitialState {
  hardState: HardState;
  confState: ConfState;
}

/**
 * Read side of the stable log. Errors are signalled by throwing CompactedError /
 * UnavailableError / SnapshotTemporarilyUnavailableError; anything else is fatal.
 */
export interface Storage {
  /** The saved HardState and ConfState (as of the last snapshot). */
  initialState(): InitialState;
  /**
   * Entries in [lo, hi). maxSize limits the total size but at least one entry is
   * returned if any. Throws CompactedError when lo <= the snapshot index.
   */
  entries(lo: number, hi: number, maxSize?: number): Entry[];
  /**
   * Term of entry i, for i in [firstIndex()-1, lastIndex()]: the term of the entry
   * just before firstIndex is kept (from the snapshot) for log matching.
   */
  term(i: number): number;
  lastIndex(): number;
  /** Index of the first entry possibly available through entries(). */
  firstIndex(): number;
  snapshot(): Snapshot;
}

/**
 * In-memory Storage.
 *
 * Invariant: #ents[0] is a dummy entry holding the index and term of the last snapshot
 * (index 0, term 0 when there is none); #ents[i] has index #ents[0].index + i.
 */
export class MemoryStorage implements Storage {
  #hardState: HardState = { term: 0, vote: 0, commit: 0 };
  #snapshot: Snapshot = emptySnapshot();
  #ents: Entry[] = [{ term: 0, index: 0, type: 0, data: new Uint8Array(0) }];

  initialState(): InitialState {
    const cs = this.#snapshot.metadata.confState;
    return {
      hardState: { ...this.#hardState },
      confState: { voters: [...cs.voters], learners: [...cs.learners] },
    };
  }

  setHardState(hs: HardState): void {
    this.#hardState = { ...hs };
  }

  entries(lo: number, hi: number, maxSize = Number.POSITIVE_INFINITY): Entry[] {
    const offset = this.#ents[0]!.index;
    if (lo <= offset) throw new CompactedError();
    if (hi > this.lastIndex() + 1) {
      throw new RaftInvariantError(`entries' hi(${hi}) is out of bound lastindex(${this.lastIndex()})`);
    }
    // Only the dummy entry: nothing was ever appended after the snapshot.
    if (this.#ents.length === 1) throw new UnavailableError();
    return limitSize(this.#ents.slice(lo - offset, hi - offset), maxSize);
  }

  term(i: number): number {
    const offset = this.#ents[0]!.index;
    if (i < offset) throw new CompactedError();
    const e = this.#ents[i - offset];
    if (e === undefined) throw new UnavailableError();
    return e.term;
  }

  lastIndex(): number {
    return this.#ents[0]!.index + this.#ents.length - 1;
  }

  firstIndex(): number {
    return this.#ents[0]!.index + 1;
  }

  snapshot(): Snapshot {
    return this.#snapshot;
  }

  /** Replaces the whole content with the snapshot. Throws SnapOutOfDateError if older. */
  applySnapshot(snap: Snapshot): void {
    if (this.#snapshot.metadata.index >= snap.metadata.index) throw new SnapOutOfDateError();
    this.#snapshot = snap;
    this.#ents = [{ term: snap.metadata.term, index: snap.metadata.index, type: 0, data: new Uint8Array(0) }];
  }

  /**
   * Records a snapshot of the state machine at `index` (which must be applied by the
   * caller). Pass the ConfState returned by the last applyConfChange.
   */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Snapshot {
    if (index <= this.#snapshot.metadata.index) throw new SnapOutOfDateError();
    const offset = this.#ents[0]!.index;
    if (index > this.lastIndex()) {
      throw new RaftInvariantError(`snapshot ${index} is out of bound lastindex(${this.lastIndex()})`);
    }
    this.#snapshot = {
      data,
      metadata: {
        index,
        term: this.#ents[index - offset]!.term,
        confState: { voters: [...confState.voters], learners: [...confState.learners] },
      },
    };
    return this.#snapshot;
  }

  /**
   * Discards entries before `compactIndex` (which becomes the new dummy entry). The
   * caller must not compact past its applied index.
   */
  compact(compactIndex: number): void {
    const offset = this.#ents[0]!.index;
    if (compactIndex <= offset) throw new CompactedError();
    if (compactIndex > this.lastIndex()) {
      throw new RaftInvariantError(`compact ${compactIndex} is out of bound lastindex(${this.lastIndex()})`);
    }
    const i = compactIndex - offset;
    const head = this.#ents[i]!;
    this.#ents = [{ term: head.term, index: head.index, type: 0, data: new Uint8Array(0) }, ...this.#ents.slice(i + 1)];
  }

  /**
   * Appends entries, truncating any existing suffix they overwrite. Entries must be
   * contiguous and must not leave a gap after the current last index.
   */
  append(entries: Entry[]): void {
    if (entries.length === 0) return;
    const first = this.firstIndex();
    const last = entries[0]!.index + entries.length - 1;
    // Everything offered is already compacted away.
    if (last < first) return;
    // Drop the part that precedes our first index (already in the snapshot).
    if (first > entries[0]!.index) entries = entries.slice(first - entries[0]!.index);
    const offset = entries[0]!.index - this.#ents[0]!.index;
    if (this.#ents.length < offset) {
      throw new RaftInvariantError(`missing log entry [last: ${this.lastIndex()}, append at: ${entries[0]!.index}]`);
    }
    // In place is safe: entries() always hands out copies (slice), never this array.
    this.#ents.length = offset;
    for (const e of entries) this.#ents.push(e);
  }
}
