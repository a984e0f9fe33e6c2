// A writer of bbolt database files, built in one pass from keys given in order (a bulk
// load): what bbolt (and so etcd and etcdctl) opens as a database of its own. Pure logic:
// pages go to an output queue the caller drains to a file at the positions given; no I/O,
// no clock. The layout is bbolt's (page.go, node.go, bucket.go, db.go), as bbolt.ts reads it:
//
//   pages 0 and 1   metas (magic, version 2, page size, root bucket, freelist page,
//                   high-water mark, txid, FNV-64a checksum); page id = txid % 2
//   page 2          the freelist: empty (every page of the file is in use)
//   pages 3…        each bucket's B+tree, written bottom-up as its keys arrive: a leaf page
//                   is written once full, and its first key goes to the branch level above,
//                   itself written once full, and so on. An element bigger than a page
//                   makes its page span several (the header's overflow count).
//
// Memory per open bucket is one page per level of its tree, whatever the data's size.
// Every bucket, the empty ones too, gets pages of its own (no inline buckets): bbolt reads
// both, and makes a small one inline itself when a later write touches it.

import { BUCKET_LEAF, ELEMENT, FLAG_BRANCH, FLAG_LEAF, FLAG_META, fnv64a, MAGIC, PAGE_HEADER, VERSION } from "./bbolt.ts";

const FLAG_FREELIST = 0x10;
const FREELIST_PAGE = 2n;
const FIRST_DATA_PAGE = 3n;
/** page.count is a u16; bbolt panics at 0xFFFF elements. */
const MAX_ELEMENTS = 0xfffe;

export class BoltWriteError extends Error {
  override name = "BoltWriteError";
}

/** What a parent holds of a bucket: bbolt's bucket header {root, sequence}. */
export interface BucketHeader {
  root: bigint;
  sequence: bigint;
}

/** Bytes to write at a byte position of the file. */
export interface PageWrite {
  position: number;
  data: Buffer;
}

interface LeafElement {
  flags: number;
  key: Uint8Array;
  value: Uint8Array;
}

interface BranchElement {
  key: Uint8Array;
  pgid: bigint;
}

interface BranchLevel {
  elems: BranchElement[];
  bytes: number;
  pagesWritten: number;
}

export class BoltWriter {
  readonly pageSize: number;
  #next = FIRST_DATA_PAGE;
  #pending: PageWrite[] = [];
  #pendingBytes = 0;
  #open = 0;
  #finished = false;

  constructor(opts: { pageSize?: number } = {}) {
    this.pageSize = opts.pageSize ?? 4096;
    if (!Number.isInteger(this.pageSize) || this.pageSize < 1024 || (this.pageSize & (this.pageSize - 1)) !== 0) {
      throw new BoltWriteError(`page size ${this.pageSize}: want a power of two, at least 1024`);
    }
  }

  /** Bytes queued for the file (drain them when this grows). */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /** Pages in the file so far (the high-water mark once finished). */
  get pages(): bigint {
    return this.#next;
  }

  /** The queued writes, in position order, adjacent pages joined; the queue is emptied. */
  drain(): PageWrite[] {
    const out: PageWrite[] = [];
    let run: PageWrite[] = [];
    let runBytes = 0;
    const close = (): void => {
      if (run.length === 0) return;
      out.push({ position: run[0]!.position, data: run.length === 1 ? run[0]!.data : Buffer.concat(run.map((w) => w.data), runBytes) });
      run = [];
      runBytes = 0;
    };
    for (const w of [...this.#pending].sort((a, b) => a.position - b.position)) {
      const last = run.at(-1);
      if (last !== undefined && last.position + last.data.length !== w.position) close();
      run.push(w);
      runBytes += w.data.length;
    }
    close();
    this.#pending = [];
    this.#pendingBytes = 0;
    return out;
  }

  /** A new bucket's tree: put its keys in order, then finish() it and put its header in the parent. */
  bucket(): BucketBuilder {
    if (this.#finished) throw new BoltWriteError("the database is finished");
    this.#open++;
    return new BucketBuilder(this, () => this.#open--);
  }

  /**
   * Ends the file: the root bucket (whose keys are the top-level buckets), the freelist and
   * the two metas. Answers the file's size in bytes.
   */
  finish(root: BucketHeader, opts: { txid?: bigint } = {}): number {
    if (this.#finished) throw new BoltWriteError("the database is finished");
    if (this.#open !== 0) throw new BoltWriteError(`${this.#open} bucket(s) not finished`);
    if (root.root < FIRST_DATA_PAGE || root.root >= this.#next) throw new BoltWriteError(`root page ${root.root} is not a page of this file`);
    this.#finished = true;
    const free = Buffer.alloc(this.pageSize);
    free.writeBigUInt64LE(FREELIST_PAGE, 0);
    free.writeUInt16LE(FLAG_FREELIST, 8);
    this.#queue(FREELIST_PAGE, free);
    // Both metas describe the same tree; the higher txid is the current one.
    const txid = opts.txid ?? 1n;
    for (const t of [txid - 1n, txid]) this.#queue(t % 2n, metaPage(this.pageSize, t, root, this.#next));
    return Number(this.#next) * this.pageSize;
  }

  /** Allocates `count` consecutive pages; answers the first. */
  allocate(count: number): bigint {
    const id = this.#next;
    this.#next += BigInt(count);
    return id;
  }

  /** Queues a page (its header's id already written) for position id × pageSize. */
  queue(id: bigint, data: Buffer): void {
    this.#queue(id, data);
  }

  #queue(id: bigint, data: Buffer): void {
    this.#pending.push({ position: Number(id) * this.pageSize, data });
    this.#pendingBytes += data.length;
  }
}

function metaPage(pageSize: number, txid: bigint, root: BucketHeader, pgid: bigint): Buffer {
  const p = Buffer.alloc(pageSize);
  p.writeBigUInt64LE(txid % 2n, 0);
  p.writeUInt16LE(FLAG_META, 8);
  const m = PAGE_HEADER;
  p.writeUInt32LE(MAGIC, m);
  p.writeUInt32LE(VERSION, m + 4);
  p.writeUInt32LE(pageSize, m + 8);
  p.writeUInt32LE(0, m + 12);
  p.writeBigUInt64LE(root.root, m + 16);
  p.writeBigUInt64LE(root.sequence, m + 24);
  p.writeBigUInt64LE(FREELIST_PAGE, m + 32);
  p.writeBigUInt64LE(pgid, m + 40);
  p.writeBigUInt64LE(txid, m + 48);
  p.writeBigUInt64LE(fnv64a(p.subarray(m, m + 56)), m + 56);
  return p;
}

/** The checksum a meta page must carry (exported for tests: bbolt's meta.sum64). */
export function metaChecksum(meta56: Uint8Array): bigint {
  return fnv64a(meta56);
}

/** Encodes a bucket header as the value of a bucket's key in its parent. */
export function bucketHeaderBytes(h: BucketHeader): Buffer {
  const b = Buffer.alloc(16);
  b.writeBigUInt64LE(h.root, 0);
  b.writeBigUInt64LE(h.sequence, 8);
  return b;
}

export class BucketBuilder {
  readonly #w: BoltWriter;
  readonly #onDone: () => void;
  #leaf: LeafElement[] = [];
  #leafBytes = PAGE_HEADER;
  #leavesWritten = 0;
  #levels: BranchLevel[] = [];
  #last: Uint8Array | undefined;
  #done = false;
  sequence = 0n;

  constructor(w: BoltWriter, onDone: () => void) {
    this.#w = w;
    this.#onDone = onDone;
  }

  /** A key and its value; keys must come in strictly increasing byte order. */
  put(key: Uint8Array, value: Uint8Array): void {
    this.#add({ flags: 0, key, value });
  }

  /** A nested bucket (finished first) under `key`. */
  putBucket(key: Uint8Array, h: BucketHeader): void {
    if (h.root === 0n) throw new BoltWriteError("inline buckets are not written");
    this.#add({ flags: BUCKET_LEAF, key, value: bucketHeaderBytes(h) });
  }

  /** Writes what is left of the tree; answers the bucket's header for its parent. */
  finish(): BucketHeader {
    if (this.#done) throw new BoltWriteError("bucket already finished");
    this.#done = true;
    this.#onDone();
    if (this.#leaf.length > 0 || this.#leavesWritten === 0) this.#flushLeaf();
    for (let i = 0; ; i++) {
      const level = this.#levels[i]!;
      if (i === this.#levels.length - 1 && level.pagesWritten === 0 && level.elems.length === 1) {
        return { root: level.elems[0]!.pgid, sequence: this.sequence };
      }
      this.#flushLevel(i);
    }
  }

  #add(e: LeafElement): void {
    if (this.#done) throw new BoltWriteError("bucket already finished");
    if (e.key.length === 0) throw new BoltWriteError("a key must not be empty");
    if (this.#last !== undefined && Buffer.compare(this.#last, e.key) >= 0) {
      throw new BoltWriteError(`keys out of order: ${Buffer.from(e.key).toString("hex")} after ${Buffer.from(this.#last).toString("hex")}`);
    }
    this.#last = e.key;
    const size = ELEMENT + e.key.length + e.value.length;
    if (this.#leaf.length > 0 && (this.#leafBytes + size > this.#w.pageSize || this.#leaf.length >= MAX_ELEMENTS)) this.#flushLeaf();
    this.#leaf.push(e);
    this.#leafBytes += size;
  }

  #flushLeaf(): void {
    const elems = this.#leaf;
    const { id, page } = this.#page(FLAG_LEAF, elems.length, this.#leafBytes);
    let data = PAGE_HEADER + elems.length * ELEMENT;
    elems.forEach((e, i) => {
      const at = PAGE_HEADER + i * ELEMENT;
      page.writeUInt32LE(e.flags, at);
      page.writeUInt32LE(data - at, at + 4);
      page.writeUInt32LE(e.key.length, at + 8);
      page.writeUInt32LE(e.value.length, at + 12);
      page.set(e.key, data);
      page.set(e.value, data + e.key.length);
      data += e.key.length + e.value.length;
    });
    this.#w.queue(id, page);
    this.#leavesWritten++;
    const first = elems[0]?.key ?? new Uint8Array(0);
    this.#leaf = [];
    this.#leafBytes = PAGE_HEADER;
    this.#addBranch(0, first, id);
  }

  #addBranch(i: number, key: Uint8Array, pgid: bigint): void {
    const level = (this.#levels[i] ??= { elems: [], bytes: PAGE_HEADER, pagesWritten: 0 });
    const size = ELEMENT + key.length;
    // A copy: the caller may reuse its buffers once the leaf page is written.
    key = Buffer.from(key);
    if (level.elems.length > 0 && (level.bytes + size > this.#w.pageSize || level.elems.length >= MAX_ELEMENTS)) this.#flushLevel(i);
    level.elems.push({ key, pgid });
    level.bytes += size;
  }

  #flushLevel(i: number): void {
    const level = this.#levels[i]!;
    const elems = level.elems;
    const { id, page } = this.#page(FLAG_BRANCH, elems.length, level.bytes);
    let data = PAGE_HEADER + elems.length * ELEMENT;
    elems.forEach((e, n) => {
      const at = PAGE_HEADER + n * ELEMENT;
      page.writeUInt32LE(data - at, at);
      page.writeUInt32LE(e.key.length, at + 4);
      page.writeBigUInt64LE(e.pgid, at + 8);
      page.set(e.key, data);
      data += e.key.length;
    });
    this.#w.queue(id, page);
    level.elems = [];
    level.bytes = PAGE_HEADER;
    level.pagesWritten++;
    this.#addBranch(i + 1, elems[0]!.key, id);
  }

  /** A zeroed page (with its overflow pages) for `bytes` of content, its header written. */
  #page(flags: number, count: number, bytes: number): { id: bigint; page: Buffer } {
    const span = Math.max(1, Math.ceil(bytes / this.#w.pageSize));
    const id = this.#w.allocate(span);
    const page = Buffer.alloc(span * this.#w.pageSize);
    page.writeBigUInt64LE(id, 0);
    page.writeUInt16LE(flags, 8);
    page.writeUInt16LE(count, 10);
    page.writeUInt32LE(span - 1, 12);
    return { id, page };
  }
}
