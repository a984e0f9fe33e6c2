import { test } from "node:test";
import assert from "node:assert/strict";
import { goJsonKind, goJsonSyntaxError } from "./go-json.ts";

// Each message below is what Go 1.19's json.Unmarshal says for the input.
const cases: Array<[string, string | undefined]> = [
  ['{"a":1}', undefined],
  [' [1, 2.5e-3, "x\\u00e9", true, false, null] ', undefined],
  ["{bad json", "invalid character 'b' looking for beginning of object key string"],
  ["", "unexpected end of JSON input"],
  ["   ", "unexpected end of JSON input"],
  ['{"a":1', "unexpected end of JSON input"],
  ["x", "invalid character 'x' looking for beginning of value"],
  ['{"a" 1}', "invalid character '1' after object key"],
  ['{"a":1 "b":2}', "invalid character '\"' after object key:value pair"],
  ["[1 2]", "invalid character '2' after array element"],
  ["{} x", "invalid character 'x' after top-level value"],
  ["tru", "unexpected end of JSON input"],
  ["trux", "invalid character 'x' in literal true (expecting 'e')"],
  ["nul1", "invalid character '1' in literal null (expecting 'l')"],
  ["-x", "invalid character 'x' in numeric literal"],
  ["1.x", "invalid character 'x' after decimal point in numeric literal"],
  ["1ex", "invalid character 'x' in exponent of numeric literal"],
  ['"a\\qb"', "invalid character 'q' in string escape code"],
  ['"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"],
  ['"a\nb"', "invalid character '\\n' in string literal"],
  ["'x'", "invalid character '\\'' looking for beginning of value"],
  ["01", "invalid character '1' after top-level value"],
];
for (const [input, want] of cases) {
  test(`goJsonSyntaxError says ${want ?? "nothing"} for ${JSON.stringify(input)}`, () => {
    assert.equal(goJsonSyntaxError(Buffer.from(input)), want);
  });
}

test("goJsonKind names JSON values as encoding/json's UnmarshalTypeError does", () => {
  assert.deepEqual([true, 1, "s", null, [], {}].map(goJsonKind), ["bool", "number", "string", "null", "array", "object"]);
});
