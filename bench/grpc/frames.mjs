// Writes the gRPC request bodies h2load sends (-d): one length-prefixed protobuf message
// each, hand-encoded (the bench imports nothing from src/). Usage: node frames.mjs <dir>
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.argv[2] ?? ".";
const varint = (n) => {
  const out = [];
  while (n > 127) {
    out.push((n & 127) | 128);
    n >>>= 7;
  }
  out.push(n);
  return out;
};
const bytesField = (field, b) => [(field << 3) | 2, ...varint(b.length), ...b];
const boolField = (field) => [field << 3, 1];
const frame = (msg) => {
  const out = Buffer.alloc(5 + msg.length);
  out.writeUInt32BE(msg.length, 1);
  Buffer.from(msg).copy(out, 5);
  return out;
};
const key = [...Buffer.from("bench-key")];
// PutRequest{key=1, value=2}: etcd's benchmark tool's 256-byte value.
writeFileSync(join(dir, "put.bin"), frame([...bytesField(1, key), ...bytesField(2, [...Buffer.alloc(256, 0x61)])]));
// RangeRequest{key=1}: linearizable; {key=1, serializable=7}.
writeFileSync(join(dir, "range.bin"), frame(bytesField(1, key)));
writeFileSync(join(dir, "range-s.bin"), frame([...bytesField(1, key), ...boolField(7)]));
// RangeRequest{key=1, range_end=2, serializable=7}: the 100 keys bench-range/000..099
// (1 KiB values each, cpu.sh's range-100 row puts them).
writeFileSync(join(dir, "range-100.bin"), frame([...bytesField(1, [...Buffer.from("bench-range/")]), ...bytesField(2, [...Buffer.from("bench-range0")]), ...boolField(7)]));
