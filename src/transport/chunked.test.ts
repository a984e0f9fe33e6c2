import { test } from "node:test";
import assert from "node:assert/strict";
import { httpChunk } from "./chunked.ts";

test("httpChunk frames the data as one HTTP/1.1 chunk: hex size, CRLF, data, CRLF", () => {
  assert.equal(httpChunk(Uint8Array.of(1, 2, 3)).toString("latin1"), "3\r\n\x01\x02\x03\r\n");
  const big = httpChunk(new Uint8Array(300).fill(7));
  assert.equal(big.subarray(0, 5).toString("latin1"), "12c\r\n");
  assert.equal(big.length, 5 + 300 + 2);
  assert.ok(big.subarray(5, 305).every((b) => b === 7));
  assert.equal(big.subarray(305).toString("latin1"), "\r\n");
});

test("httpChunk refuses empty data: a zero-size chunk would end the stream's body", () => {
  assert.throws(() => httpChunk(new Uint8Array(0)), RangeError);
});
