import { test } from "node:test";
import assert from "node:assert/strict";
import { crc32c } from "@node-rs/crc32";
import { scanSegment } from "./decoder.ts";
import { WalCorruptError } from "./errors.ts";
import {
  CRC_RECORD_SIZE, HARD_STATE_RECORD_SIZE, RecordType, RecordWriter, SNAPSHOT_REF_RECORD_SIZE, TRAILER_BYTE,
  entryRecordSize, metadataRecordSize, parseCrc, parseEntry, parseHardState, parseSnapshotRef, readRecord, recordSize,
} from "./record.ts";
import type { WalEntry } from "./record.ts";

test("crc32c chains: crc(b, crc(a)) equals crc(a + b)", () => {
  const a = Buffer.from("hello, ");
  const b = Buffer.from("world");
  assert.equal(crc32c(b, crc32c(a)), crc32c(Buffer.concat([a, b])));
});

const sizeCases: { bodyLen: number; size: number }[] = [
  { bodyLen: 1, size: 16 },  // 8 + 1 + 7 trailer
  { bodyLen: 6, size: 16 },  // 8 + 6 + 2
  { bodyLen: 7, size: 16 },  // 8 + 7 + 1
  { bodyLen: 8, size: 24 },  // a trailer is never empty: 8 + 8 + 8
  { bodyLen: 100, size: 112 },
];
for (const c of sizeCases) {
  test(`recordSize pads a body of ${c.bodyLen} bytes to ${c.size}`, () => {
    assert.equal(recordSize(c.bodyLen), c.size);
    assert.equal(c.size % 8, 0);
    assert.ok(c.size - 8 - c.bodyLen >= 1 && c.size - 8 - c.bodyLen <= 8);
  });
}

function encodeSample(entries: WalEntry[], prevCrc: number): Buffer {
  const md = Buffer.from("member-metadata");
  let size = CRC_RECORD_SIZE + metadataRecordSize(md) + HARD_STATE_RECORD_SIZE + SNAPSHOT_REF_RECORD_SIZE;
  for (const e of entries) size += entryRecordSize(e);
  const w = new RecordWriter({ size, crc: prevCrc });
  w.crcRecord();
  w.metadata(md);
  for (const e of entries) w.entry(e);
  w.hardState({ term: 7, vote: 3, commit: 2 ** 40 + 5 });
  w.snapshotRef({ index: 2 ** 52, term: 9 });
  assert.equal(w.offset, size, "the writer fills exactly the size computed in advance");
  return w.buf;
}

const sampleEntries: WalEntry[] = [
  { term: 1, index: 1, type: 0, data: new Uint8Array() },
  { term: 1, index: 2, type: 1, data: Buffer.from("conf change") },
  { term: 2 ** 33, index: 2 ** 53 - 1, type: 0, data: Buffer.alloc(1000, 0xee) },
];

test("codec round trip returns every record and value that was written", () => {
  const buf = encodeSample(sampleEntries, 0x12345678);
  const scan = scanSegment(buf, { file: "seg", last: false, prevCrc: 0x12345678 });
  assert.equal(scan.end, buf.length);
  assert.equal(scan.torn, null);
  const types = scan.records.map((r) => r.type);
  assert.deepEqual(types, [RecordType.Crc, RecordType.Metadata, RecordType.Entry, RecordType.Entry, RecordType.Entry, RecordType.HardState, RecordType.SnapshotRef]);
  const [crcRec, mdRec, e1, e2, e3, hsRec, refRec] = scan.records;
  assert.ok(crcRec && mdRec && e1 && e2 && e3 && hsRec && refRec);
  assert.equal(parseCrc(buf, crcRec.payloadStart), 0x12345678);
  assert.equal(buf.subarray(mdRec.payloadStart, mdRec.payloadEnd).toString(), "member-metadata");
  const got = [e1, e2, e3].map((r) => parseEntry(buf, r.payloadStart, r.payloadEnd));
  assert.deepEqual(got.map((e) => ({ ...e, data: Buffer.from(e.data) })), sampleEntries.map((e) => ({ ...e, data: Buffer.from(e.data) })));
  assert.deepEqual(parseHardState(buf, hsRec.payloadStart), { term: 7, vote: 3, commit: 2 ** 40 + 5 });
  assert.deepEqual(parseSnapshotRef(buf, refRec.payloadStart), { index: 2 ** 52, term: 9 });
});

test("every record ends with a non-zero trailer byte at an 8-aligned end", () => {
  const buf = encodeSample(sampleEntries, 0);
  const scan = scanSegment(buf, { file: "seg", last: false, prevCrc: null });
  for (const r of scan.records) {
    const end = r.offset + recordSize(buf.readUInt32LE(r.offset));
    assert.equal(end % 8, 0);
    assert.equal(buf[end - 1], TRAILER_BYTE);
  }
});

test("scanSegment throws WalCorruptError when the crc chain does not continue the previous segment", () => {
  const buf = encodeSample(sampleEntries, 5);
  assert.throws(() => scanSegment(buf, { file: "seg", last: false, prevCrc: 6 }), (err: unknown) => err instanceof WalCorruptError && err.offset === 0);
});

test("readRecord reports a crc mismatch when one payload byte changes", () => {
  const buf = encodeSample(sampleEntries, 0);
  const scan = scanSegment(buf, { file: "seg", last: false, prevCrc: null });
  const e = scan.records[2];
  assert.ok(e);
  const before = readRecord(buf, scan.records[2]?.offset ?? 0, 0);
  assert.equal(before.kind, "bad", "the seed matters: the chain value, not 0, is expected here");
  buf[e.payloadStart + 3] = (buf[e.payloadStart + 3] as number) ^ 0x40;
  assert.throws(() => scanSegment(buf, { file: "seg", last: false, prevCrc: null }), (err: unknown) => err instanceof WalCorruptError && err.offset === e.offset);
});

test("RecordWriter refuses values that are not non-negative safe integers", () => {
  const w = new RecordWriter({ size: 1024, crc: 0 });
  assert.throws(() => w.entry({ term: -1, index: 1, type: 0, data: new Uint8Array() }), RangeError);
  assert.throws(() => w.hardState({ term: 1, vote: 2 ** 53, commit: 0 }), RangeError);
  assert.throws(() => w.entry({ term: 1, index: 1, type: 256, data: new Uint8Array() }), RangeError);
});
