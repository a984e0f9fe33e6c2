// Writes the key space's image (format in image.ts) a slice at a time while the store keeps
// changing, and still produces exactly the image of the moment the writer was created.
//
// Why: like the v2 store's (../v2/image-writer.ts), a large key space imaged in one piece
// froze the member for as long as the encoding took. Here the store's own rules make the
// copy cheap:
// - the B-tree of key indexes is cloned (sorted-btree's clone is copy on write, O(1)), so
//   keys created or dropped later do not disturb the walk;
// - records are immutable and only appended, with main revisions above the image's: they
//   are filtered out by revision (generationsAsOf);
// - compaction is the one change that removes records: it replaces a key index's array of
//   generations rather than changing it, and tells the writer first (beforeCompact), which
//   keeps the old array of every key not yet written.
// Pure: no I/O, no clock. The caller decides how big a slice is and when the next one runs.

import { imageKeyText } from "./image.ts";
import type { MvccImage } from "./image.ts";
import { generationsAsOf } from "./key-index.ts";
import type { KeyIndex, StoredRecord } from "./key-index.ts";
import type { KeyId } from "./keys.ts";
import type { LessorImage } from "./lessor.ts";
import type { KeyTree } from "./range.ts";

/** JSON text made a slice at a time: step() until it answers true, take() what was written. */
export interface SlicedJson {
  /** Writes up to `budget` more items; true when the text is complete. */
  step(budget: number): boolean;
  /** The text written since the last take() (whole JSON values: a slice never splits a token). */
  take(): string;
}

export class MvccImageWriter implements SlicedJson {
  readonly #revision: number;
  #out: string[] = [];
  readonly #entries: Iterator<[KeyId, KeyIndex]>;
  /** Generations of keys not yet written, as they were before a compaction changed them. */
  readonly #kept = new Map<KeyIndex, readonly (readonly StoredRecord[])[]>();
  /** The last key written (keys are written in order). */
  #last: KeyId | undefined;
  #written = 0;
  #finished = false;

  /** `tree` must be a clone no one changes (the store's own tree goes on changing). */
  constructor(state: { tree: KeyTree; revision: number; compactRevision: number }) {
    this.#revision = state.revision;
    this.#entries = state.tree.entries();
    // The same text as JSON.stringify(encodeImage(...)): property order included.
    const head: Omit<MvccImage, "keys"> = { format: "kvctl-mvcc/1", revision: state.revision, compactRevision: state.compactRevision };
    this.#out.push(`${JSON.stringify(head).slice(0, -1)},"keys":[`);
  }

  /** True once the whole image is written: beforeCompact() is no longer needed. */
  get finished(): boolean {
    return this.#finished;
  }

  /** The store is about to compact ki (its array of generations will be replaced). */
  beforeCompact(ki: KeyIndex): void {
    if (this.#finished || this.#kept.has(ki)) return;
    if (this.#last !== undefined && ki.id <= this.#last) return; // written already
    this.#kept.set(ki, ki.generations());
  }

  step(budget: number): boolean {
    let left = budget;
    while (left > 0 && !this.#finished) {
      const r = this.#entries.next();
      if (r.done === true) {
        this.#out.push("]}");
        this.#finished = true;
        this.#kept.clear();
        break;
      }
      const ki = r.value[1];
      const generations = generationsAsOf(this.#kept.get(ki) ?? ki.generations(), this.#revision);
      this.#kept.delete(ki);
      this.#last = ki.id;
      left--;
      // Every key in the clone existed at the image's revision; none can be empty, but a
      // key without records must not be written as one.
      if (generations.length === 0) continue;
      this.#out.push((this.#written++ > 0 ? "," : "") + imageKeyText(ki.key, generations));
    }
    return this.#finished;
  }

  take(): string {
    const s = this.#out.join("");
    this.#out = [];
    return s;
  }
}

/** The key space's image (KeySpaceImage): the store's image in slices, the leases as taken at the start. */
export class KeySpaceImageWriter implements SlicedJson {
  readonly #mvcc: MvccImageWriter;
  readonly #leases: string;
  #out = '{"format":"kvctl-v3/1","mvcc":';
  #finished = false;

  constructor(mvcc: MvccImageWriter, leases: LessorImage) {
    this.#mvcc = mvcc;
    this.#leases = JSON.stringify(leases);
  }

  step(budget: number): boolean {
    if (this.#finished) return true;
    const done = this.#mvcc.step(budget);
    this.#out += this.#mvcc.take();
    if (done) {
      this.#out += `,"leases":${this.#leases}}`;
      this.#finished = true;
    }
    return this.#finished;
  }

  take(): string {
    const s = this.#out;
    this.#out = "";
    return s;
  }
}
