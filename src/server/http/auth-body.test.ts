import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeRoleBody, decodeUserBody, firstJsonValue } from "./auth-body.ts";

const b = (s: string | number[]): Buffer => (typeof s === "string" ? Buffer.from(s, "utf8") : Buffer.from(s));

const firstValueCases: Array<[string, string, unknown]> = [
  ["an object", '{"a":1}', { a: 1 }],
  ["an object followed by garbage (Go reads only the first value)", '{"a":1}garbage', { a: 1 }],
  ["an object followed by a second object", '{"a":1} {"a":2}', { a: 1 }],
  ["a string holding braces", '{"a":"}{"}x', { a: "}{" }],
  ["an escaped quote in a string", '{"a":"\\"}"}', { a: '"}' }],
  ["null", "null", null],
  ["null then whitespace and garbage", "null xyz", null],
  ["a literal glued to garbage (Go stops at the literal's end)", "nullx", null],
  ["a number glued to garbage", "01", 0],
  ["leading whitespace", " \r\n\t{}", {}],
];

for (const [name, text, want] of firstValueCases) {
  test(`firstJsonValue reads ${name}`, () => {
    assert.deepEqual(firstJsonValue(b(text)), { value: want });
  });
}

const invalidCases: Array<[string, string | number[]]> = [
  ["an empty body", ""],
  ["only whitespace", "  \n"],
  ["a bare word", "nope"],
  ["an incomplete literal", "nul"],
  ["a lone minus", "-x"],
  ["an unterminated object", '{"user":"a"'],
  ["a mismatched bracket", '{"a":1]'],
  ["a trailing comma", '{"a":1,}'],
  ["single quotes", "{'a':1}"],
  ["a byte order mark", [0xef, 0xbb, 0xbf, 0x7b, 0x7d]],
  ["a control character in a string", '{"a":"x\u0001"}'],
];

for (const [name, text] of invalidCases) {
  test(`firstJsonValue rejects ${name}`, () => {
    assert.equal(firstJsonValue(b(text)), undefined);
  });
}

test("decodeUserBody reads every field, case-insensitively, ignoring unknown ones", () => {
  assert.deepEqual(decodeUserBody(b('{"USER":"a","Password":"p","roles":["x"],"grant":["g"],"revoke":[],"other":{"deep":[1]}}')), {
    user: "a",
    password: "p",
    roles: ["x"],
    grant: ["g"],
    revoke: [],
  });
});

test("decodeUserBody folds the long s and Kelvin sign as Go does", () => {
  assert.equal(decodeUserBody(b('{"u\u017fer":"a"}'))?.user, "a");
  assert.deepEqual(decodeUserBody(b('{"role":"r","revo\u212ae":["x"]}'))?.revoke, ["x"]);
});

test("decodeUserBody: null keeps a string, nils a list, and a null element is the empty string", () => {
  assert.deepEqual(decodeUserBody(b('{"user":null,"roles":null,"grant":["a",null]}')), { user: "", password: "", roles: null, grant: ["a", ""], revoke: null });
  assert.deepEqual(decodeUserBody(b("null")), { user: "", password: "", roles: null, grant: null, revoke: null });
});

const userTypeErrors = ['{"user":5}', '{"password":true}', '{"roles":"admin"}', '{"roles":[1]}', '{"grant":{}}', '"just a string"', "[]", "42"];

for (const body of userTypeErrors) {
  test(`decodeUserBody rejects the type mismatch ${body}`, () => {
    assert.equal(decodeUserBody(b(body)), undefined);
  });
}

test("decodeUserBody turns lone surrogates and invalid UTF-8 into U+FFFD", () => {
  assert.equal(decodeUserBody(b('{"user":"a\\ud800"}'))?.user, "a\ufffd");
  assert.equal(decodeUserBody(b([0x7b, 0x22, 0x75, 0x73, 0x65, 0x72, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]))?.user, "\ufffd");
});

test("decodeRoleBody reads permissions, grant and revoke under kv", () => {
  assert.deepEqual(decodeRoleBody(b('{"role":"r","permissions":{"kv":{"read":["/a"],"write":null}},"grant":{"KV":{"Read":["/b"]}},"revoke":null}')), {
    role: "r",
    permissions: { read: ["/a"], write: null },
    grant: { read: ["/b"], write: null },
    revoke: null,
  });
});

test("decodeRoleBody keeps a present but empty grant (Go allocates the pointer)", () => {
  assert.deepEqual(decodeRoleBody(b('{"role":"r","grant":{}}'))?.grant, { read: null, write: null });
  assert.deepEqual(decodeRoleBody(b('{"role":"r","grant":{"kv":null}}'))?.grant, { read: null, write: null });
});

const roleTypeErrors = ['{"role":["r"]}', '{"permissions":[]}', '{"permissions":{"kv":[]}}', '{"permissions":{"kv":{"read":"/a"}}}', '{"grant":5}', '{"revoke":"x"}'];

for (const body of roleTypeErrors) {
  test(`decodeRoleBody rejects the type mismatch ${body}`, () => {
    assert.equal(decodeRoleBody(b(body)), undefined);
  });
}
