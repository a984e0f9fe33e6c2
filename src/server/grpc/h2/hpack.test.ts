// HPACK against RFC 7541 Appendix C (the header lists and the dynamic table's size after
// each block), Huffman both ways, and the malformed inputs that are COMPRESSION_ERRORs.
import assert from "node:assert/strict";
import { test } from "node:test";
import { HpackDecoder, HpackError, encodeHeaderBlock, huffmanDecode, huffmanEncode, tableSizeUpdate } from "./hpack.ts";

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ""), "hex");
type Step = [block: string, fields: string[], tableSize: number, tableLength: number];

function series(limit: number, steps: Step[]): void {
  const d = new HpackDecoder(limit);
  for (const [block, fields, size, length] of steps) {
    assert.deepEqual(d.decode(hex(block)), fields);
    assert.equal(d.tableSize, size);
    assert.equal(d.tableLength, length);
  }
}

test("C.2: one field of each representation", () => {
  series(4096, [["400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572", ["custom-key", "custom-header"], 55, 1]]);
  series(4096, [["040c 2f73 616d 706c 652f 7061 7468", [":path", "/sample/path"], 0, 0]]);
  series(4096, [["1008 7061 7373 776f 7264 0673 6563 7265 74", ["password", "secret"], 0, 0]]);
  series(4096, [["82", [":method", "GET"], 0, 0]]);
});

const req1 = [":method", "GET", ":scheme", "http", ":path", "/", ":authority", "www.example.com"];
const req2 = [...req1, "cache-control", "no-cache"];
const req3 = [":method", "GET", ":scheme", "https", ":path", "/index.html", ":authority", "www.example.com", "custom-key", "custom-value"];

test("C.3: requests without Huffman share the dynamic table", () => {
  series(4096, [
    ["8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", req1, 57, 1],
    ["8286 84be 5808 6e6f 2d63 6163 6865", req2, 110, 2],
    ["8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65", req3, 164, 3],
  ]);
});

test("C.4: requests with Huffman", () => {
  series(4096, [
    ["8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", req1, 57, 1],
    ["8286 84be 5886 a8eb 1064 9cbf", req2, 110, 2],
    ["8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf", req3, 164, 3],
  ]);
});

const date1 = "Mon, 21 Oct 2013 20:13:21 GMT";
const loc = "https://www.example.com";
const resp1 = [":status", "302", "cache-control", "private", "date", date1, "location", loc];
const resp2 = [":status", "307", "cache-control", "private", "date", date1, "location", loc];
const resp3 = [":status", "200", "cache-control", "private", "date", "Mon, 21 Oct 2013 20:13:22 GMT", "location", loc, "content-encoding", "gzip", "set-cookie", "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"];

test("C.5: responses without Huffman, a 256-byte table that evicts", () => {
  series(256, [
    ["4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", resp1, 222, 4],
    ["4803 3330 37c1 c0bf", resp2, 222, 4],
    ["88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31", resp3, 215, 3],
  ]);
});

test("C.6: responses with Huffman, a 256-byte table that evicts", () => {
  series(256, [
    ["4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3", resp1, 222, 4],
    ["4883 640e ffc1 c0bf", resp2, 222, 4],
    ["88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07", resp3, 215, 3],
  ]);
});

test("Huffman: encode and decode are inverse over every octet", () => {
  const all = String.fromCharCode(...Array.from({ length: 256 }, (_, i) => i));
  const enc = huffmanEncode(all);
  assert.equal(huffmanDecode(enc, 0, enc.length), all);
  assert.deepEqual(huffmanEncode("www.example.com"), hex("f1e3 c2e5 f23a 6ba0 ab90 f4ff"));
});

test("malformed blocks are HpackErrors", () => {
  const bad = (block: string, why: string, limit = 4096): void => {
    assert.throws(() => new HpackDecoder(limit).decode(hex(block)), HpackError, why);
  };
  bad("80", "index 0");
  bad("be", "index past the static table with an empty dynamic table");
  bad("ff ff ff ff ff 0f", "integer overflow");
  bad("ff", "truncated integer");
  bad("0405 2f61", "string longer than the block");
  bad("0482 ff ff", "Huffman EOS");
  bad("0481 00", "Huffman padding of zeros");
  bad("0482 f1 ff", "padding over 7 bits");
  bad("3fe21f", "table size update above SETTINGS_HEADER_TABLE_SIZE");
  bad("82 20", "table size update after a field");
});

test("a table size update shrinks and empties the table; 0 then back up", () => {
  const d = new HpackDecoder();
  d.decode(hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"));
  assert.equal(d.tableLength, 1);
  assert.deepEqual(d.decode(Buffer.concat([tableSizeUpdate(0), tableSizeUpdate(4096), hex("82")])), [":method", "GET"]);
  assert.equal(d.tableLength, 0);
  assert.throws(() => d.decode(hex("be")), HpackError);
});

test("encoder: static indexes, literals never indexed, pseudo-headers first; our decoder reads it back", () => {
  const block = encodeHeaderBlock({ "content-type": "application/grpc", ":status": 200, "grpc-status": "0" });
  assert.equal(block[0], 0x88, ":status 200 is static index 8");
  assert.deepEqual(new HpackDecoder().decode(block), [":status", "200", "content-type", "application/grpc", "grpc-status", "0"]);
  const long = "x".repeat(300);
  assert.deepEqual(new HpackDecoder().decode(encodeHeaderBlock({ "grpc-message": long })), ["grpc-message", long]);
});

test("a list over maxListSize is truncated (fields dropped, RFC 9113 sizes) while the table still takes the block's entries", () => {
  const d = new HpackDecoder();
  // Literal with incremental indexing, new name: "k" = "vvvv" (1 + 4 + 32 = 37 bytes), then
  // the same entry by index twice: 111 bytes.
  const block = Buffer.from([0x40, 1, 0x6b, 4, 0x76, 0x76, 0x76, 0x76, 0x80 | 62, 0x80 | 62]);
  assert.deepEqual(d.decode(block, 111), ["k", "vvvv", "k", "vvvv", "k", "vvvv"]);
  assert.equal(d.truncated, false);
  const d2 = new HpackDecoder();
  assert.deepEqual(d2.decode(block, 110), []);
  assert.equal(d2.truncated, true);
  assert.equal(d2.tableLength, 1);
  assert.deepEqual(d2.decode(Buffer.from([0x80 | 62])), ["k", "vvvv"]);
  assert.equal(d2.truncated, false);
});

test("a string longer than the decoder's maxString is an HpackError, plain or Huffman-coded", () => {
  const d = new HpackDecoder(4096, 4);
  assert.deepEqual(d.decode(Buffer.from([0x00, 1, 0x6b, 4, 0x76, 0x76, 0x76, 0x76])), ["k", "vvvv"]);
  assert.throws(() => d.decode(Buffer.from([0x00, 1, 0x6b, 5, 0x76, 0x76, 0x76, 0x76, 0x76])), HpackError);
  // "aaaaaaaa" Huffman-coded is 5 bytes (5 bits a character), 8 decoded.
  const h = huffmanEncode("aaaaaaaa");
  assert.ok(h.length <= 4 + 1);
  const d2 = new HpackDecoder(4096, 6);
  assert.throws(() => d2.decode(Buffer.concat([Buffer.from([0x00, 1, 0x6b, 0x80 | h.length]), h])), HpackError);
});

test("a repeated block decodes as the table says now: an added entry or a size update changes what the same bytes mean", () => {
  const d = new HpackDecoder();
  const lit = (name: string, value: string): Buffer => Buffer.concat([Buffer.from([0x40, name.length]), Buffer.from(name), Buffer.from([value.length]), Buffer.from(value)]);
  // Index 62: the newest dynamic entry; with a Huffman-coded :path as a literal without indexing (as nghttp2 sends it).
  const path = (p: string): Buffer => {
    const h = huffmanEncode(p);
    return Buffer.concat([Buffer.from([0x04, 0x80 | h.length]), h]);
  };
  const same = Buffer.concat([Buffer.from([0x83, 0x80 | 62]), path("/etcdserverpb.KV/Put")]);
  d.decode(lit("a", "1"));
  const first = d.decode(same);
  assert.deepEqual(first, [":method", "POST", "a", "1", ":path", "/etcdserverpb.KV/Put"]);
  assert.deepEqual(d.decode(Buffer.from(same)), first, "the same bytes again, from another buffer");
  d.decode(lit("b", "2"));
  assert.deepEqual(d.decode(same), [":method", "POST", "b", "2", ":path", "/etcdserverpb.KV/Put"]);
  // Another Huffman path of the same length right after: not the last one's text.
  const other = Buffer.concat([Buffer.from([0x83, 0x80 | 62]), path("/etcdserverpb.KV/Pux")]);
  assert.equal(other.length, same.length);
  assert.deepEqual(d.decode(other), [":method", "POST", "b", "2", ":path", "/etcdserverpb.KV/Pux"]);
  assert.deepEqual(d.decode(same), [":method", "POST", "b", "2", ":path", "/etcdserverpb.KV/Put"]);
  // A size update to 0 empties the table: index 62 is gone.
  d.decode(tableSizeUpdate(0));
  assert.throws(() => d.decode(same), HpackError);
});

test("a repeated block is measured against the limit it is decoded with", () => {
  const d = new HpackDecoder();
  const block = Buffer.from([0x00, 1, 0x6b, 4, 0x76, 0x76, 0x76, 0x76]);
  assert.deepEqual(d.decode(block, 1000), ["k", "vvvv"]);
  assert.deepEqual(d.decode(block, 10), []);
  assert.equal(d.truncated, true);
  assert.deepEqual(d.decode(block, 1000), ["k", "vvvv"]);
  assert.equal(d.truncated, false);
});
