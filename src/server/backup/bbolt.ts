// A read-only reader of bbolt database files (etcd's backend, and the file
// `etcdctl snapshot save` writes), from a Buffer or a file read a page at a time (a
// database bigger than a Buffer or than memory): nothing is written.
//
// Layout read (bbolt's page.go, bucket.go, db.go; little-endian throughout):
//   page header, 16 bytes: id u64, flags u16, count u16, overflow u32; a page with
//   overflow n spans n+1 pages of the file.
//   meta (pages 0 and 1, after the header): magic u32, version u32, pageSize u32,
//   flags u32, root bucket {root u64, sequence u64}, freelist u64, pgid u64 (high-water
//   mark), txid u64, checksum u64 (FNV-64a of the 56 bytes before it). Of the two, the
//   valid one with the higher txid is current: the other may be a torn write.
//   branch element, 16 bytes: pos u32, ksize u32, pgid u64 (key at element + pos).
//   leaf element, 16 bytes: flags u32, pos u32, ksize u32, vsize u32 (key at
//   element + pos, value right after); flags 1: the value is a bucket header
//   {root u64, sequence u64}, root 0 meaning an inline bucket whose leaf page follows
//   the header inside the value.

import { readSync } from "node:fs";

// bbolt's format numbers, which the writer (bbolt-writer.ts) writes.
export const PAGE_HEADER = 16;
export const ELEMENT = 16;
const META_BYTES = 64;
export const MAGIC = 0xed0cdaed;
export const VERSION = 2;
export const FLAG_BRANCH = 0x01;
export const FLAG_LEAF = 0x02;
export const FLAG_META = 0x04;
export const BUCKET_LEAF = 0x01;

export class BoltFormatError extends Error {
  override name = "BoltFormatError";
}

export interface BoltMeta {
  pageSize: number;
  version: number;
  flags: number;
  root: bigint;
  freelist: bigint;
  /** Pages in use: the database's size is pgid * pageSize (tx.Size()). */
  pgid: bigint;
  txid: bigint;
}

/** One key of a bucket: `value` is undefined for a nested bucket. */
export interface BoltEntry {
  key: Buffer;
  value: Buffer | undefined;
}

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

export function fnv64a(b: Uint8Array): bigint {
  let h = FNV_OFFSET;
  for (const x of b) h = ((h ^ BigInt(x)) * FNV_PRIME) & MASK64;
  return h;
}

/** Where the pages are read from: a whole file in memory, or a file read on demand. */
export interface BoltSource {
  readonly size: number;
  /** `length` bytes at `position` (the caller checked they are inside `size`). */
  read(position: number, length: number): Buffer;
}

function bufferSource(buf: Buffer): BoltSource {
  return { size: buf.length, read: (position, length) => buf.subarray(position, position + length) };
}

/** A file read with positioned reads on `fd` (which the caller opened and closes), `size` bytes of it. */
export function fileSource(fd: number, size: number): BoltSource {
  return {
    size,
    read(position, length) {
      const b = Buffer.allocUnsafe(length);
      for (let at = 0; at < length; ) {
        const n = readSync(fd, b, at, length - at, position + at);
        if (n === 0) throw new BoltFormatError(`file ends at ${position + at}, inside a page`);
        at += n;
      }
      return b;
    },
  };
}

/** The meta at `off` (the page's start), or why it is not valid. */
function readMeta(src: BoltSource, off: number): BoltMeta | string {
  if (off + PAGE_HEADER + META_BYTES > src.size) return "file too short for a meta page";
  const buf = src.read(off, PAGE_HEADER + META_BYTES);
  off = 0;
  const m = off + PAGE_HEADER;
  if ((buf.readUInt16LE(off + 8) & FLAG_META) === 0) return "not a meta page";
  if (buf.readUInt32LE(m) !== MAGIC) return "invalid database (bad magic)";
  const version = buf.readUInt32LE(m + 4);
  if (version !== VERSION) return `version mismatch: ${version}, want ${VERSION}`;
  if (fnv64a(buf.subarray(m, m + 56)) !== buf.readBigUInt64LE(m + 56)) return "checksum error";
  return {
    pageSize: buf.readUInt32LE(m + 8),
    version,
    flags: buf.readUInt32LE(m + 12),
    root: buf.readBigUInt64LE(m + 16),
    freelist: buf.readBigUInt64LE(m + 32),
    pgid: buf.readBigUInt64LE(m + 40),
    txid: buf.readBigUInt64LE(m + 48),
  };
}

/** A node of a bucket's B+tree: a page in the file, or an inline bucket's page in a value. */
interface PageRef {
  buf: Buffer;
  off: number;
}

export class BoltDb {
  readonly meta: BoltMeta;
  private readonly src: BoltSource;

  constructor(from: Buffer | BoltSource) {
    const src = Buffer.isBuffer(from) ? bufferSource(from) : from;
    this.src = src;
    const m0 = readMeta(src, 0);
    // Meta 1 sits one page in; meta 0 says the page size (or, if torn, the usual 4096).
    const size = typeof m0 === "string" ? 4096 : m0.pageSize;
    const m1 = readMeta(src, size);
    const valid = [m0, m1].filter((m): m is BoltMeta => typeof m !== "string");
    if (valid.length === 0) throw new BoltFormatError(`not a bbolt database: ${typeof m0 === "string" ? m0 : ""}`);
    valid.sort((a, b) => (a.txid > b.txid ? -1 : a.txid < b.txid ? 1 : 0));
    const meta = valid[0]!;
    if (Number(meta.pgid) * meta.pageSize > src.size) {
      throw new BoltFormatError(`file size ${src.size} too small for ${meta.pgid} pages of ${meta.pageSize} bytes`);
    }
    this.meta = meta;
  }

  /** tx.Size(): the bytes the database uses (etcdctl's "total size"). */
  get size(): number {
    return Number(this.meta.pgid) * this.meta.pageSize;
  }

  private page(id: bigint): PageRef {
    if (id < 2n || id >= this.meta.pgid) throw new BoltFormatError(`page ${id} out of range (high-water mark ${this.meta.pgid})`);
    const off = Number(id) * this.meta.pageSize;
    const head = this.src.read(off, PAGE_HEADER);
    const overflow = head.readUInt32LE(12);
    if (off + (overflow + 1) * this.meta.pageSize > this.src.size) throw new BoltFormatError(`page ${id} runs past the end of the file`);
    if (head.readBigUInt64LE(0) !== id) throw new BoltFormatError(`page ${id}: header says page ${head.readBigUInt64LE(0)}`);
    return { buf: this.src.read(off, (overflow + 1) * this.meta.pageSize), off: 0 };
  }

  /** The last entry of a top-level bucket (its rightmost leaf), without reading the rest; undefined if empty or absent. */
  lastOf(name: string): BoltEntry | undefined {
    const root = this.lookupBucket(this.page(this.meta.root), Buffer.from(name));
    if (root === undefined) return undefined;
    let ref = root;
    for (;;) {
      const flags = ref.buf.readUInt16LE(ref.off + 8);
      const count = ref.buf.readUInt16LE(ref.off + 10);
      if (count === 0) return undefined;
      if (flags & FLAG_BRANCH) {
        ref = this.page(ref.buf.readBigUInt64LE(ref.off + PAGE_HEADER + (count - 1) * ELEMENT + 8));
        continue;
      }
      let last: BoltEntry | undefined;
      for (const e of this.walk(ref)) last = e;
      return last;
    }
  }

  /** The root bucket's entries (etcd's buckets), in key order. */
  *roots(): Generator<BoltEntry> {
    yield* this.walk(this.page(this.meta.root));
  }

  /** A top-level bucket's entries in key order; undefined if there is no such bucket. */
  bucket(...path: string[]): Generator<BoltEntry> | undefined {
    let ref = this.page(this.meta.root);
    for (const name of path) {
      const v = this.lookupBucket(ref, Buffer.from(name));
      if (v === undefined) return undefined;
      ref = v;
    }
    return this.walk(ref);
  }

  /** The page of the nested bucket `name` inside the tree at `ref`. */
  private lookupBucket(ref: PageRef, name: Buffer): PageRef | undefined {
    for (const e of this.walkRaw(ref)) {
      const c = e.key.compare(name);
      if (c > 0) return undefined;
      if (c === 0) return e.bucket ? this.bucketRoot(e.raw) : undefined;
    }
    return undefined;
  }

  private bucketRoot(header: Buffer): PageRef {
    if (header.length < 16) throw new BoltFormatError("bucket header too short");
    const root = header.readBigUInt64LE(0);
    // An inline bucket: its leaf page is the rest of the value.
    if (root === 0n) return { buf: header, off: 16 };
    return this.page(root);
  }

  private *walk(ref: PageRef): Generator<BoltEntry> {
    for (const e of this.walkRaw(ref)) yield { key: e.key, value: e.bucket ? undefined : e.raw };
  }

  private *walkRaw(ref: PageRef): Generator<{ key: Buffer; raw: Buffer; bucket: boolean }> {
    const { buf, off } = ref;
    if (off + PAGE_HEADER > buf.length) throw new BoltFormatError("page header past the end");
    const flags = buf.readUInt16LE(off + 8);
    const count = buf.readUInt16LE(off + 10);
    const el = off + PAGE_HEADER;
    if (el + count * ELEMENT > buf.length) throw new BoltFormatError("page elements past the end");
    if (flags & FLAG_BRANCH) {
      for (let i = 0; i < count; i++) {
        const e = el + i * ELEMENT;
        yield* this.walkRaw(this.page(buf.readBigUInt64LE(e + 8)));
      }
    } else if (flags & FLAG_LEAF) {
      for (let i = 0; i < count; i++) {
        const e = el + i * ELEMENT;
        const f = buf.readUInt32LE(e);
        const k = e + buf.readUInt32LE(e + 4);
        const ksize = buf.readUInt32LE(e + 8);
        const vsize = buf.readUInt32LE(e + 12);
        if (k + ksize + vsize > buf.length) throw new BoltFormatError("leaf element past the end");
        yield { key: buf.subarray(k, k + ksize), raw: buf.subarray(k + ksize, k + ksize + vsize), bucket: (f & BUCKET_LEAF) !== 0 };
      }
    } else {
      throw new BoltFormatError(`page at ${off}: flags 0x${flags.toString(16)}, want a branch or a leaf`);
    }
  }

  /** Every (bucket, entries) pair of the root, in key order. */
  *buckets(): Generator<{ name: Buffer; entries: Generator<BoltEntry> }> {
    for (const e of this.walkRaw(this.page(this.meta.root))) {
      if (!e.bucket) continue;
      yield { name: e.key, entries: this.walk(this.bucketRoot(e.raw)) };
    }
  }
}

/** True if `head` (at least 24 bytes of a file) starts like a bbolt database. */
export function looksLikeBolt(head: Buffer): boolean {
  return head.length >= 24 && head.readUInt32LE(16) === MAGIC;
}
