import { test } from "node:test";
import assert from "node:assert/strict";
import { JsonMessageReader, MAX_JSON_DEPTH, readJsonValue, readRequestBody, type JsonNode } from "./v3-json.ts";

/** A node as plain data (Maps as objects, raw string bytes dropped) for comparisons. */
function plain(n: JsonNode): unknown {
  switch (n.kind) {
    case "object":
      return Object.fromEntries([...n.fields].map(([k, v]) => [k, plain(v)]));
    case "array":
      return n.items.map(plain);
    case "string":
      return n.value;
    case "number":
      return { num: n.text };
    case "bool":
      return n.value;
    case "null":
      return null;
  }
}

// Each error text is what etcd 3.4.23's gateway (Go's json.Decoder) answered for the body.
const bodies: Array<{ body: string; want: unknown }> = [
  { body: "{bad json", want: { error: "invalid character 'b' looking for beginning of object key string" } },
  { body: "{", want: { error: "unexpected EOF" } },
  { body: '{"key":"YQ=="', want: { error: "unexpected EOF" } },
  { body: '{"key":"YQ==" "x":1}', want: { error: "invalid character '\"' after object key:value pair" } },
  { body: '{"key":"YQ==",}', want: { error: "invalid character '}' looking for beginning of object key string" } },
  { body: "[1}", want: { error: "invalid character '}' after array element" } },
  { body: "tru", want: { error: "unexpected EOF" } },
  { body: "trux", want: { error: "invalid character 'x' in literal true (expecting 'e')" } },
  { body: '"\\u00zz"', want: { error: "invalid character 'z' in \\u hexadecimal character escape" } },
  { body: '{"k":"a\nb"}', want: { error: "invalid character '\\n' in string literal" } },
  { body: "[".repeat(MAX_JSON_DEPTH + 1), want: { error: "exceeded max depth" } },
  { body: "", want: { node: undefined } },
  { body: " \n\t", want: { node: undefined } },
  { body: "null", want: { node: null } },
  { body: '{"key":"YQ=="} trailing garbage', want: { node: { key: "YQ==" } } },
  { body: '{"a":"x","a":"y"}', want: { node: { a: "y" } } },
  { body: '{"n":[1.0,-0,1e3,99999999999999999999]}', want: { node: { n: [{ num: "1.0" }, { num: "-0" }, { num: "1e3" }, { num: "99999999999999999999" }] } } },
  { body: '{"s":"\\u0059Q\\u003d\\u003d","e":"é\\"\\\\"}', want: { node: { s: "YQ==", e: 'é"\\' } } },
  { body: "123", want: { node: { num: "123" } } },
];
for (const { body, want } of bodies) {
  test(`readRequestBody answers ${JSON.stringify(want).slice(0, 60)} for ${JSON.stringify(body.slice(0, 30))}`, () => {
    const r = readRequestBody(Buffer.from(body));
    assert.deepEqual("error" in r ? r : { node: r.node === undefined ? undefined : plain(r.node) }, want);
  });
}

test("readJsonValue keeps the raw bytes of a string (enum names are matched unescaped)", () => {
  const r = readJsonValue(Buffer.from('"\\u0041SCEND"'), 0, true);
  assert.ok(r.ok && r.node.kind === "string");
  assert.equal(r.node.value, "ASCEND");
  assert.equal(r.node.raw.toString("latin1"), "\\u0041SCEND");
});

test("readJsonValue waits for more bytes when a top-level number may go on", () => {
  assert.deepEqual(readJsonValue(Buffer.from("12"), 0, false), { ok: false, truncated: true });
  const r = readJsonValue(Buffer.from("12"), 0, true);
  assert.ok(r.ok && r.end === 2);
});

test("JsonMessageReader yields values split across chunks in order", () => {
  const reader = new JsonMessageReader(1 << 20);
  const got: unknown[] = [];
  const take = (r: { nodes: JsonNode[]; error?: string }): void => {
    assert.equal(r.error, undefined);
    got.push(...r.nodes.map(plain));
  };
  take(reader.push(Buffer.from('{"a":1}{"b')));
  take(reader.push(Buffer.from('":"x\\')));
  take(reader.push(Buffer.from('"y"} \n {} 7')));
  take(reader.end());
  assert.deepEqual(got, [{ a: { num: "1" } }, { b: 'x"y' }, {}, { num: "7" }]);
});

test("JsonMessageReader reports a syntax error after the good values before it", () => {
  const reader = new JsonMessageReader(1 << 20);
  const r = reader.push(Buffer.from('{"create_request":{}} xx'));
  assert.equal(r.nodes.length, 1);
  assert.equal(r.error, "invalid character 'x' looking for beginning of value");
});

test("JsonMessageReader says unexpected EOF when the body ends inside a value", () => {
  const reader = new JsonMessageReader(1 << 20);
  assert.deepEqual(reader.push(Buffer.from('{"a":')), { nodes: [] });
  assert.deepEqual(reader.end(), { nodes: [], error: "unexpected EOF" });
});

test("JsonMessageReader refuses a pending value larger than its limit", () => {
  const reader = new JsonMessageReader(16);
  const r = reader.push(Buffer.from(`{"key":"${"A".repeat(64)}`));
  assert.match(r.error ?? "", /larger than max/);
});
