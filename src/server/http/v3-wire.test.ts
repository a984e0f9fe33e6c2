import { test } from "node:test";
import assert from "node:assert/strict";
import { readJsonValue, type JsonNode } from "./v3-json.ts";
import { GatewayDecodeError, bool, bytes, enumValue, goBase64Decode, goQuoteBytes, int64, messageFields, pick, repeatedEnum, uint64 } from "./v3-wire.ts";
import { FILTER_TYPE, SORT_ORDER } from "./v3-decode.ts";

function node(json: string): JsonNode {
  const r = readJsonValue(Buffer.from(json), 0, true);
  assert.ok(r.ok, json);
  return r.node;
}

/** The value, or the Go error text. */
function run<T>(f: () => T): T | { error: string } {
  try {
    return f();
  } catch (err) {
    assert.ok(err instanceof GatewayDecodeError, String(err));
    return { error: err.message };
  }
}

// Answers checked against etcd 3.4.23 (curl on /v3/kv/range and /v3/kv/put).
const base64Cases: Array<[string, string | number]> = [
  ["YQ==", "a"],
  ["YR==", "a"], // unused bits are not checked
  ["YQ==\n", "a"], // newlines are skipped
  ["", ""],
  ["AAEC/w==", "\x00\x01\x02\xff"],
  ["not base64!", 3],
  ["eA", 0], // missing padding: Go blames the start of the quantum
  ["Y Q==", 1],
  ["Y-_=", 1], // URL-safe alphabet is refused
  ["YQ=x", 2],
  ["YQ====", 4],
  ["YQ==YQ==", 4],
  ["=", 0],
];
for (const [input, want] of base64Cases) {
  test(`goBase64Decode gives ${JSON.stringify(want)} for ${JSON.stringify(input)}`, () => {
    const r = goBase64Decode(input);
    assert.deepEqual(typeof r === "number" ? r : r.toString("latin1"), want);
  });
}

const int64Cases: Array<[string, bigint | { error: string }]> = [
  ["12", 12n],
  ['"12"', 12n],
  ['" 12"', 12n],
  ['"-0"', 0n],
  ["null", 0n],
  ['"null"', 0n],
  ['"9223372036854775807"', 9223372036854775807n],
  ['"9223372036854775808"', { error: "json: cannot unmarshal number 9223372036854775808 into Go value of type int64" }],
  ["1.5", { error: "json: cannot unmarshal number 1.5 into Go value of type int64" }],
  ['"1.5"', { error: "json: cannot unmarshal number 1.5 into Go value of type int64" }],
  ["1.0", { error: "json: cannot unmarshal number 1.0 into Go value of type int64" }],
  ['"1e3"', { error: "json: cannot unmarshal number 1e3 into Go value of type int64" }],
  ['"abc"', { error: "invalid character 'a' looking for beginning of value" }],
  ['""', { error: "unexpected end of JSON input" }],
  ['"01"', { error: "invalid character '1' after top-level value" }],
  ["true", { error: "json: cannot unmarshal bool into Go value of type int64" }],
  ["{}", { error: "json: cannot unmarshal object into Go value of type int64" }],
];
for (const [input, want] of int64Cases) {
  test(`int64 reads ${input} as ${typeof want === "bigint" ? want : want.error}`, () => {
    assert.deepEqual(run(() => int64(node(input))), want);
  });
}

test("uint64 refuses a negative number with Go's text", () => {
  assert.deepEqual(run(() => uint64(node("-1"))), { error: "json: cannot unmarshal number -1 into Go value of type uint64" });
});

const typeCases: Array<[string, () => unknown, unknown]> = [
  ["bool from a string", () => bool(node('"true"')), { error: "json: cannot unmarshal string into Go value of type bool" }],
  ["bool from a number", () => bool(node("1")), { error: "json: cannot unmarshal number into Go value of type bool" }],
  ["bytes from a number", () => bytes(node("123")), { error: "json: cannot unmarshal number into Go value of type []uint8" }],
  ["bytes from an array of strings", () => bytes(node('["YQ=="]')), { error: "json: cannot unmarshal string into Go value of type uint8" }],
  ["bytes from an array of numbers", () => [...bytes(node("[97,98]"))], [97, 98]],
  ["a message from an array", () => messageFields(node('["array"]')), { error: "json: cannot unmarshal array into Go value of type map[string]json.RawMessage" }],
  ["a message from a string", () => messageFields(node('"str"')), { error: "json: cannot unmarshal string into Go value of type map[string]json.RawMessage" }],
  ["an enum by name", () => enumValue(node('"DESCEND"'), SORT_ORDER), 2],
  ["an enum by number", () => enumValue(node("2"), SORT_ORDER), 2],
  ["an unknown enum name", () => enumValue(node('"X"'), SORT_ORDER), { error: 'unknown value "X" for enum etcdserverpb.RangeRequest_SortOrder' }],
  ["an escaped enum name", () => enumValue(node('"\\u0041SCEND"'), SORT_ORDER), { error: 'unknown value "\\\\u0041SCEND" for enum etcdserverpb.RangeRequest_SortOrder' }],
  ["a fractional enum", () => enumValue(node("2.5"), SORT_ORDER), { error: "json: cannot unmarshal number 2.5 into Go value of type etcdserverpb.RangeRequest_SortOrder" }],
  ["a repeated enum given as a known name", () => repeatedEnum(node('"NOPUT"'), FILTER_TYPE), { error: 'invalid target "slice" for enum etcdserverpb.WatchCreateRequest_FilterType' }],
  ["a repeated enum given as an unknown name", () => repeatedEnum(node('"X"'), FILTER_TYPE), { error: 'unknown value "X" for enum etcdserverpb.WatchCreateRequest_FilterType' }],
  ["a repeated enum", () => repeatedEnum(node('["NODELETE",0]'), FILTER_TYPE), [1, 0]],
  ["a bool enum", () => enumValue(node("true"), SORT_ORDER), { error: "json: cannot unmarshal bool into Go value of type etcdserverpb.RangeRequest_SortOrder" }],
];
for (const [what, f, want] of typeCases) {
  test(`the wire decoding answers ${JSON.stringify(want)} for ${what}`, () => {
    assert.deepEqual(run(f), want);
  });
}

test("pick prefers the camelCase name when both names are given, and reads null as absent", () => {
  const f = messageFields(node('{"keys_only":true,"keysOnly":false,"count_only":null}'));
  assert.equal(bool(pick(f, "keys_only", "keysOnly")), false);
  assert.equal(pick(f, "count_only", "countOnly"), undefined);
});

test("goQuoteBytes quotes like Go's %q", () => {
  assert.equal(goQuoteBytes(Buffer.from('a"b\\c\n\x01é')), '"a\\"b\\\\c\\n\\x01é"');
});
