// The bundle's `kvctl serve` (dist/bundle/cli/serve.cjs, scripts/bundle.mjs) comes with a
// code cache this Node accepts: a cache V8 refused would cost nothing visible but the
// ~50 ms of a restart's CPU it is there to save. Needs `node scripts/bundle.mjs` first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import Module from "node:module";
import { join, resolve } from "node:path";
import { Script } from "node:vm";
import { verifiedCache } from "../../src/cli/serve-bundle.ts";

const file = resolve(import.meta.dirname, "../../dist/bundle/cli/serve.cjs");

test("the bundle's serve.cjs has a code cache that matches it and that V8 accepts", () => {
  const source = readFileSync(file, "utf8");
  const data = verifiedCache(source, readFileSync(`${file}.cache`));
  assert.ok(data !== undefined, "the cache's header does not match serve.cjs");
  const script = new Script(Module.wrap(source), { filename: file, cachedData: data });
  assert.equal(script.cachedDataRejected, false);
});

test("serve.cjs sits beside the chunks, so package-relative paths resolve the same", () => {
  const pkg = JSON.parse(readFileSync(join(file, "../../../../package.json"), "utf8")) as { name: string };
  assert.equal(pkg.name, JSON.parse(readFileSync(resolve(import.meta.dirname, "../../package.json"), "utf8")).name);
});
