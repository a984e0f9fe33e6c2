import { test } from "node:test";
import assert from "node:assert/strict";
import { parseAuthorization, type Credential } from "./auth-access.ts";

const basic = (s: string): string => "Basic " + Buffer.from(s, "utf8").toString("base64");

const cases: Array<[string, string | undefined, Credential["kind"], string?, string?]> = [
  ["no header", undefined, "none"],
  ["an empty header (counts as absent)", "", "none"],
  ["valid credentials", basic("root:rootpw"), "basic", "root", "rootpw"],
  ["a lower-case scheme", "basic " + Buffer.from("u:p").toString("base64"), "basic", "u", "p"],
  ["an upper-case scheme", "BASIC " + Buffer.from("u:p").toString("base64"), "basic", "u", "p"],
  ["a colon in the password", basic("u:p:q"), "basic", "u", "p:q"],
  ["an empty password", basic("root:"), "basic", "root", ""],
  ["an empty user", basic(":pw"), "basic", "", "pw"],
  ["non-ASCII credentials", basic("jürgen:päss"), "basic", "jürgen", "päss"],
  ["no colon", basic("rootpw"), "malformed"],
  ["not base64", "Basic !!!not-base64", "malformed"],
  ["base64 without padding", "Basic cm9vdDpyb290cHc", "malformed"],
  ["padding in the middle", "Basic cm9v=DpyYg==", "malformed"],
  ["two spaces after the scheme", "Basic  " + Buffer.from("u:p").toString("base64"), "malformed"],
  ["another scheme", "Bearer sometoken", "malformed"],
  ["the scheme alone", "Basic", "malformed"],
  ["a digest header", 'Digest username="u"', "malformed"],
  ["base64 of an empty string", "Basic ", "malformed"],
  ["a user name that is not UTF-8", "Basic " + Buffer.from([0xff, 0x3a, 0x70]).toString("base64"), "malformed"],
];

for (const [name, header, kind, user, password] of cases) {
  test(`parseAuthorization gives ${kind} for ${name}`, () => {
    const c = parseAuthorization(header);
    assert.equal(c.kind, kind);
    if (c.kind === "basic") {
      assert.equal(c.user, user);
      assert.equal(c.password.toString("utf8"), password);
    }
  });
}

test("parseAuthorization keeps the password as raw bytes (compared as bytes)", () => {
  const c = parseAuthorization("Basic " + Buffer.from([0x75, 0x3a, 0xff, 0x00]).toString("base64"));
  assert.equal(c.kind, "basic");
  if (c.kind === "basic") assert.deepEqual([...c.password], [0xff, 0x00]);
});
