// Reads a backup file (format.ts) section by section, with its sha256 checked first
// (unless the caller skips it, as etcdctl's --skip-hash-check). Memory stays at one
// section (1 MiB) whatever the file's size.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { ALIGN_BYTES, BackupFormatError, MAGIC, SECTION, SHA256_BYTES, type BackupHeader, type SectionType } from "./format.ts";

export interface Section {
  type: SectionType;
  payload: Buffer;
}

/** The body's length (the file without its sha256), after checking the hash unless skipped. */
export async function checkBackup(path: string, opts: { skipHashCheck: boolean }): Promise<{ bodyBytes: number; hasHash: boolean }> {
  const { size } = await stat(path);
  const hasHash = size % ALIGN_BYTES === SHA256_BYTES;
  if (!hasHash && !opts.skipHashCheck) throw new BackupFormatError("snapshot missing hash but --skip-hash-check=false");
  const bodyBytes = hasHash ? size - SHA256_BYTES : size;
  if (hasHash && !opts.skipHashCheck) {
    const h = createHash("sha256");
    for await (const c of createReadStream(path, { start: 0, end: bodyBytes - 1, highWaterMark: 1024 * 1024 })) h.update(c as Buffer);
    const fh = await open(path, "r");
    const want = Buffer.alloc(SHA256_BYTES);
    try {
      await fh.read(want, 0, SHA256_BYTES, bodyBytes);
    } finally {
      await fh.close();
    }
    const got = h.digest();
    if (!got.equals(want)) throw new BackupFormatError(`expected sha256 ${want.toString("hex")}, got ${got.toString("hex")}`);
  }
  return { bodyBytes, hasHash };
}

/** The sections of the body, in order, ending with END. */
export async function* readSections(path: string, bodyBytes: number): AsyncGenerator<Section> {
  const fh = await open(path, "r");
  try {
    let at = 0;
    const read = async (n: number): Promise<Buffer> => {
      if (at + n > bodyBytes) throw new BackupFormatError(`snapshot file ends inside a section (offset ${at})`);
      const b = Buffer.allocUnsafe(n);
      const { bytesRead } = await fh.read(b, 0, n, at);
      if (bytesRead !== n) throw new BackupFormatError(`snapshot file ends early (offset ${at})`);
      at += n;
      return b;
    };
    const magic = await read(MAGIC.length);
    if (!magic.equals(MAGIC)) throw new BackupFormatError("not a kvctl snapshot file (an etcd snapshot? restore it with etcdctl and migrate with 'kvctl migrate')");
    for (;;) {
      const head = await read(5);
      const type = head.readUInt8(0);
      if (!(Object.values(SECTION) as number[]).includes(type)) throw new BackupFormatError(`unknown section type ${type} at offset ${at - 5}`);
      const payload = await read(head.readUInt32BE(1));
      yield { type: type as SectionType, payload };
      if (type === SECTION.END) return;
    }
  } finally {
    await fh.close();
  }
}

/** Each record of a RECORDS section: [revision key, encoded record]. */
export function* recordsOf(payload: Buffer): Generator<[Buffer, Buffer]> {
  let at = 0;
  while (at < payload.length) {
    if (at + 20 > payload.length) throw new BackupFormatError("a record is cut short");
    const key = payload.subarray(at, at + 16);
    const n = payload.readUInt32BE(at + 16);
    if (at + 20 + n > payload.length) throw new BackupFormatError("a record is cut short");
    yield [key, payload.subarray(at + 20, at + 20 + n)];
    at += 20 + n;
  }
}

export function parseHeader(payload: Buffer): BackupHeader {
  const h = JSON.parse(payload.toString("utf8")) as BackupHeader;
  if (h?.format !== "kvctl-snapshot/1") throw new BackupFormatError(`unknown snapshot format ${JSON.stringify(h?.format)}`);
  return h;
}
