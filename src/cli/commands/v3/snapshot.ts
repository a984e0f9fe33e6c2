// v3 snapshot save|status|restore (snapshot_command.go, clientv3/snapshot). The file a
// member streams is etcd's: a bbolt database in etcd 3.4's schema with kvctl's own bucket
// beside (src/server/backup/etcd-bolt-writer.ts), then the sha256 of the database; files
// of kvctl's older format (src/server/backup/format.ts) are still read.
//
// - save streams /v3/maintenance/snapshot into <file>.part (etcd's 32 KiB blobs, then
//   a last blob holding the sha256 of all before it), checks the size and the hash,
//   fsyncs, renames: the file is byte for byte what etcdctl saves from the same stream.
// - status reads a bbolt file (kvctl's or etcd's) as etcdctl reads it
//   (server/backup/etcd-bolt.ts), its sha256 checked; an old-format file: hash (CRC-32 of
//   the body), revision and key count (from its header), total size (the body's bytes).
// - restore makes a new member's data dir offline, like `kvctl serve` starts one (from
//   a bbolt file through server/backup/etcd-restore.ts: all of kvctl's state from a file
//   kvctl saved, the v3 state from one etcd saved): this is
//   the one v3 module allowed to import server code (test/architecture.test.ts), and it
//   loads it only for status and restore, so `save` stays a plain client.

import { createHash } from "node:crypto";
import { closeSync, createReadStream, existsSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { open, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { unb64, wireNumber, type WireInt } from "../../../client/v3-types.ts";
import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { printOut, v3ErrorText, v3Fail, V3Exit, withV3Context } from "./context.ts";
import { printDbStatus, type DbStatus } from "./printers-maintenance.ts";

const ALIGN = 512;
const SHA256_BYTES = 32;

/** A Node fs error worded as Go's *PathError: `stat <path>: no such file or directory`. */
export function goPathError(err: unknown, op: string, path: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const words: Readonly<Record<string, string>> = {
    ENOENT: "no such file or directory",
    EACCES: "permission denied",
    EISDIR: "is a directory",
    ENOTDIR: "not a directory",
    ENOSPC: "no space left on device",
  };
  const w = code === undefined ? undefined : words[code];
  return w === undefined ? (err instanceof Error ? err.message : String(err)) : `${op} ${path}: ${w}`;
}

function writeAll(fd: number, b: Buffer): void {
  for (let at = 0; at < b.length; ) at += writeSync(fd, b, at, b.length - at);
}

// ---- save ----

interface WireSnapshotResponse {
  remaining_bytes?: WireInt;
  blob?: string;
}

async function save(inv: V3Invocation, io: Io): Promise<number> {
  if (inv.args.length !== 1) throw v3Fail(V3Exit.BadArgs, "snapshot save expects one argument");
  const file = inv.args[0] ?? "";
  const eps = inv.globals.endpoints;
  if (eps.length !== 1) throw v3Fail(V3Exit.Interrupted, `snapshot must be requested to one selected node, not multiple [${eps.join(" ")}]`);
  return withV3Context(inv, io, async (ctx) => {
    const part = `${file}.part`;
    let fd: number;
    try {
      fd = openSync(part, "w", 0o600);
    } catch (err) {
      throw v3Fail(V3Exit.Interrupted, `could not open ${part} (${goPathError(err, "open", part)})`);
    }
    let closed = false;
    try {
      const sha = createHash("sha256");
      // A blob is written only once the next one arrives: the last is the sha256, not data.
      let pending: Buffer | undefined;
      let total = 0;
      let written = 0;
      // etcdctl sets no deadline on a snapshot unless --command-timeout is given.
      await ctx.client.stream("/v3/maintenance/snapshot", {}, (result) => {
        const r = result as WireSnapshotResponse;
        const blob = unb64(r.blob);
        if (pending === undefined) total = wireNumber(r.remaining_bytes) + blob.length;
        else {
          writeAll(fd, pending);
          sha.update(pending);
          written += pending.length;
        }
        pending = blob;
      });
      if (pending === undefined || written === 0) throw new Error("snapshot stream ended without data");
      // A connection cut mid-stream ends the stream quietly: the byte count tells.
      if (written !== total) throw new Error(`snapshot stream ended after ${written} of ${total} bytes`);
      const digest = sha.digest();
      if (!digest.equals(pending)) {
        throw new Error(`snapshot hash mismatch: the server sent sha256 ${pending.toString("hex")}, the data received has ${digest.toString("hex")}`);
      }
      writeAll(fd, pending);
      fsyncSync(fd);
      closeSync(fd);
      closed = true;
      renameSync(part, file);
    } catch (err) {
      if (!closed) closeSync(fd);
      rmSync(part, { force: true });
      throw v3Fail(V3Exit.Interrupted, v3ErrorText(err));
    }
    io.stdout(`Snapshot saved at ${file}\n`);
    return V3Exit.Success;
  });
}

// ---- status ----

const crc32: (input: Uint8Array, initial?: number) => number = (
  createRequire(import.meta.url)("@node-rs/crc32") as { crc32: (input: Uint8Array, initial?: number) => number }
).crc32;

/** bbolt's meta page magic, right after the 16-byte page header: an etcd snapshot. */
const BOLT_MAGIC = 0xed0cdaed;

/** The status of a kvctl or etcd snapshot file; a file of another kind is a clear error. */
export async function snapshotStatus(file: string): Promise<DbStatus> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (err) {
    throw new Error(goPathError(err, "stat", file));
  }
  const { MAGIC } = await import("../../../server/backup/format.ts");
  const head = Buffer.alloc(Math.max(MAGIC.length, 20));
  const fh = await open(file, "r");
  try {
    await fh.read(head, 0, head.length, 0);
  } finally {
    await fh.close();
  }
  if (!head.subarray(0, MAGIC.length).equals(MAGIC)) {
    if (head.readUInt32LE(16) === BOLT_MAGIC) {
      // A bbolt file (what kvctl and etcd save): read as etcdctl's status reads it. The
      // sha256 a saved file ends with is checked too, which etcdctl's status does not do:
      // a backup verified by status is one restore will take.
      const { etcdSnapshotStatus } = await import("../../../server/backup/etcd-bolt.ts");
      const { fileSource } = await import("../../../server/backup/bbolt.ts");
      const hasHash = size % ALIGN === SHA256_BYTES;
      const bodyBytes = hasHash ? size - SHA256_BYTES : size;
      if (hasHash) await checkSha256(file, bodyBytes);
      // Read a page at a time: a database of any size, in bounded memory.
      const fd = openSync(file, "r");
      try {
        return etcdSnapshotStatus(fileSource(fd, bodyBytes));
      } finally {
        closeSync(fd);
      }
    }
    throw new Error(`${file} is not a kvctl snapshot file`);
  }
  const hasHash = size % ALIGN === SHA256_BYTES;
  const bodyBytes = hasHash ? size - SHA256_BYTES : size;
  let crc = 0;
  for await (const c of createReadStream(file, { start: 0, end: bodyBytes - 1, highWaterMark: 1024 * 1024 })) crc = crc32(c as Buffer, crc);
  if (hasHash) await checkSha256(file, bodyBytes);
  const { readSections, parseHeader } = await import("../../../server/backup/reader.ts");
  const { SECTION } = await import("../../../server/backup/format.ts");
  for await (const s of readSections(file, bodyBytes)) {
    if (s.type !== SECTION.HEADER) break;
    const h = parseHeader(s.payload);
    return { hash: crc >>> 0, revision: h.revision, totalKey: h.totalKeys, totalSize: bodyBytes };
  }
  throw new Error(`${file} has no header section`);
}

/** The sha256 of the first `bodyBytes` bytes against the 32 bytes after them. */
async function checkSha256(file: string, bodyBytes: number): Promise<void> {
  const sha = createHash("sha256");
  if (bodyBytes > 0) for await (const c of createReadStream(file, { start: 0, end: bodyBytes - 1, highWaterMark: 1024 * 1024 })) sha.update(c as Buffer);
  const want = Buffer.alloc(SHA256_BYTES);
  const t = await open(file, "r");
  try {
    await t.read(want, 0, SHA256_BYTES, bodyBytes);
  } finally {
    await t.close();
  }
  const got = sha.digest();
  if (!got.equals(want)) throw new Error(`snapshot file integrity check failed: expected sha256 ${want.toString("hex")}, got ${got.toString("hex")}`);
}

async function status(inv: V3Invocation, io: Io): Promise<number> {
  if (inv.args.length !== 1) throw v3Fail(V3Exit.BadArgs, "snapshot status requires exactly one argument");
  let s: DbStatus;
  try {
    s = await snapshotStatus(inv.args[0] ?? "");
  } catch (err) {
    throw v3Fail(V3Exit.Error, err instanceof Error ? err.message : String(err));
  }
  printOut(io, () => printDbStatus(s, { format: inv.globals.writeOut, hex: inv.globals.hex }));
  return V3Exit.Success;
}

// ---- restore ----

const str = (inv: V3Invocation, name: string): string => {
  const v = inv.flags[name];
  return typeof v === "string" ? v : "";
};

async function restore(inv: V3Invocation, io: Io): Promise<number> {
  if (inv.args.length !== 1) throw v3Fail(V3Exit.BadArgs, "snapshot restore requires exactly one argument");
  const file = inv.args[0] ?? "";
  const name = str(inv, "name");
  const peerUrls = str(inv, "initial-advertise-peer-urls").split(",").map((u) => u.trim()).filter((u) => u !== "");
  // etcdctl's default is `default=http://localhost:2380` whatever --name says; kvctl
  // builds it from --name and --initial-advertise-peer-urls, as `kvctl serve` does.
  const clusterText = str(inv, "initial-cluster") || peerUrls.map((u) => `${name}=${u}`).join(",");
  const dataDir = str(inv, "data-dir") || `${name}.kvctl`;
  const { parseInitialCluster } = await import("../../../server/config.ts");
  let cluster: Map<string, string[]>;
  try {
    cluster = parseInitialCluster(clusterText);
  } catch (err) {
    throw v3Fail(V3Exit.BadArgs, err instanceof Error ? err.message : String(err));
  }
  const mine = cluster.get(name);
  if (mine === undefined) throw v3Fail(V3Exit.Error, `couldn't find local name "${name}" in the initial cluster configuration`);
  const canon = (list: readonly string[]): string[] => list.map((u) => new URL(u).href).sort();
  if (canon(mine).join(",") !== canon(peerUrls).join(",")) {
    throw v3Fail(
      V3Exit.Error,
      `--initial-cluster has ${name}=${mine.join(",")} but missing from --initial-advertise-peer-urls=${peerUrls.join(",")}`,
    );
  }
  if (existsSync(dataDir)) throw v3Fail(V3Exit.Error, `data-dir "${dataDir}" exists`);
  const walDir = str(inv, "wal-dir");
  if (walDir !== "" && existsSync(walDir)) throw v3Fail(V3Exit.Error, `wal-dir "${walDir}" exists`);
  try {
    await stat(file);
  } catch (err) {
    throw v3Fail(V3Exit.Error, goPathError(err, "open", file));
  }
  // etcd's own snapshot (a bbolt file) goes through its converter, then the same restore.
  const head = Buffer.alloc(24);
  const fh = await open(file, "r");
  try {
    await fh.read(head, 0, head.length, 0);
  } finally {
    await fh.close();
  }
  const { restoreBackup } = await import("../../../server/backup/restore.ts");
  const restoreFrom = head.readUInt32LE(16) === BOLT_MAGIC ? (await import("../../../server/backup/etcd-restore.ts")).restoreEtcdSnapshot : restoreBackup;
  try {
    const r = await restoreFrom({
      file,
      name,
      dataDir,
      initialCluster: cluster,
      initialClusterToken: str(inv, "initial-cluster-token"),
      skipHashCheck: inv.flags["skip-hash-check"] === true,
      walDir,
    });
    // etcdctl logs its progress on stderr (zap JSON lines); kvctl says what it made in one line.
    io.stderr(
      `restored snapshot ${file} into ${dataDir}: member ${r.memberId.toString(16)} of cluster ${r.clusterId.toString(16)}, ` +
        `revision ${r.header.revision}, raft index ${r.index}\n`,
    );
  } catch (err) {
    // The data dir did not exist before: a half-made one would only stop the next try.
    rmSync(dataDir, { recursive: true, force: true });
    if (walDir !== "") rmSync(walDir, { recursive: true, force: true });
    throw v3Fail(V3Exit.Error, err instanceof Error ? err.message : String(err));
  }
  return V3Exit.Success;
}

export async function run(inv: V3Invocation, io: Io): Promise<number> {
  switch (inv.path[1]) {
    case "save":
      return save(inv, io);
    case "status":
      return status(inv, io);
    case "restore":
      return restore(inv, io);
    default:
      throw v3Fail(V3Exit.Error, `unknown command "${inv.path.join(" ")}"`);
  }
}
