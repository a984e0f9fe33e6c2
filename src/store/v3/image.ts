// The store's snapshot image and digest. The image is plain JSON (bytes as base64, lease
// IDs as decimal strings) so it can ride inside a WAL snapshot; it holds every record the
// store keeps (compaction decides how many), from which the per-revision history is rebuilt.

import { createHash } from "node:crypto";
import { KeyIndex, StoredRecord } from "./key-index.ts";
import { keyId, type KeyId } from "./keys.ts";
import type { KeyValue } from "./types.ts";

/**
 * One record: a tombstone is the only record with version 0 (and create revision 0,
 * empty value, lease "0").
 */
export type ImageRecord = [main: number, sub: number, createRevision: number, version: number, value: string, lease: string];

export interface MvccImage {
  format: "kvctl-mvcc/1";
  revision: number;
  /** -1 before the first compaction (etcd's compactMainRev). */
  compactRevision: number;
  /** In key order; generations as the key index holds them. */
  keys: { key: string; generations: ImageRecord[][] }[];
}

export function encodeImage(state: {
  revision: number;
  compactRevision: number;
  indexes: Iterable<KeyIndex>;
}): MvccImage {
  const keys: MvccImage["keys"] = [];
  for (const ki of state.indexes) keys.push(imageKey(ki.key, ki.generations()));
  return { format: "kvctl-mvcc/1", revision: state.revision, compactRevision: state.compactRevision, keys };
}

/** One key's entry in the image. */
export function imageKey(key: Buffer, generations: readonly (readonly StoredRecord[])[]): MvccImage["keys"][number] {
  return {
    key: key.toString("base64"),
    generations: generations.map((g) =>
      g.map((r): ImageRecord => [r.main, r.sub, r.createRevision, r.version, r.value.toString("base64"), r.lease.toString()]),
    ),
  };
}

/** Image records carry their values: nothing is read through a source. */
const NO_SOURCE = {
  readValue(): Buffer {
    throw new Error("mvcc image: a record without its value");
  },
};

function fail(detail: string): never {
  throw new Error(`Cannot restore mvcc image: ${detail}`);
}

function isInt(n: unknown): n is number {
  return typeof n === "number" && Number.isSafeInteger(n);
}

/** Decodes and checks an image; throws on anything malformed (a corrupt snapshot must stop the member). */
export function restoreImage(image: MvccImage): { revision: number; compactRevision: number; keys: { id: KeyId; generations: StoredRecord[][] }[] } {
  if (image === null || typeof image !== "object" || image.format !== "kvctl-mvcc/1") fail("unknown format");
  const { revision, compactRevision } = image;
  if (!isInt(revision) || revision < 1) fail("bad revision");
  if (!isInt(compactRevision) || compactRevision < -1 || compactRevision > revision) fail("bad compact revision");
  if (!Array.isArray(image.keys)) fail("no keys");
  const keys: { id: KeyId; generations: StoredRecord[][] }[] = [];
  let prevId: string | undefined;
  for (const entry of image.keys) {
    if (typeof entry?.key !== "string" || !Array.isArray(entry.generations)) fail("bad key entry");
    const key = Buffer.from(entry.key, "base64");
    const id = keyId(key);
    if (key.length === 0 || (prevId !== undefined && !(prevId < id))) fail("keys empty or out of order");
    prevId = id;
    const generations = entry.generations.map((g) => {
      if (!Array.isArray(g)) fail("bad generation");
      return g.map((r): StoredRecord => {
        if (!Array.isArray(r) || r.length !== 6) fail("bad record");
        const [main, sub, createRevision, version, value, lease] = r;
        if (![main, sub, createRevision, version].every(isInt) || main < 1 || main > revision || sub < 0) {
          fail(`bad record revision for ${JSON.stringify(id)}`);
        }
        if (typeof value !== "string" || typeof lease !== "string" || !/^-?\d+$/.test(lease)) fail("bad record value");
        return new StoredRecord(id, main, sub, createRevision, version, Buffer.from(value, "base64"), BigInt(lease), version === 0);
      });
    });
    try {
      // Checked here (the store builds its own index from them with its value source).
      KeyIndex.fromRecords(id, NO_SOURCE, generations);
    } catch (err) {
      fail((err as Error).message);
    }
    keys.push({ id, generations });
  }
  return { revision, compactRevision, keys };
}

/** sha256 over the revision, the compaction point and the live key-values, length-framed. */
export function hashState(state: { revision: number; compactRevision: number; live: Iterable<KeyValue> }): string {
  const h = createHash("sha256");
  h.update(`kvctl-mvcc/1 rev=${state.revision} compact=${state.compactRevision}\n`);
  const len = Buffer.alloc(4);
  for (const kv of state.live) {
    len.writeUInt32BE(kv.key.length);
    h.update(len);
    h.update(kv.key);
    h.update(` ${kv.createRevision} ${kv.modRevision} ${kv.version} ${kv.lease} `);
    len.writeUInt32BE(kv.value.length);
    h.update(len);
    h.update(kv.value);
  }
  return h.digest("hex");
}
