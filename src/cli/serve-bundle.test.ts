import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { codeCacheFile, coverageCollected, loadServe, runCommonJs, sourceText, verifiedCache } from "./serve-bundle.ts";

const dir = mkdtempSync(join(tmpdir(), "serve-bundle-"));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const file = join(dir, "m.cjs");
const source = `"use strict";\nexports.twice = (n) => 2 * n;\nexports.dir = __dirname;\nexports.path = require("node:path").basename(__filename);\n`;

test("runCommonJs runs a file as Node's loader would: exports, require, __filename, __dirname", () => {
  const e = runCommonJs(file, source, undefined).exports as { twice(n: number): number; dir: string; path: string };
  assert.equal(e.twice(21), 42);
  assert.equal(e.dir, dir);
  assert.equal(e.path, "m.cjs");
});

test("a cache made from the source is verified and accepted by V8", () => {
  const { script } = runCommonJs(file, source, undefined);
  const cacheFile = codeCacheFile(source, script.createCachedData());
  const data = verifiedCache(source, cacheFile);
  assert.ok(data !== undefined);
  assert.equal(runCommonJs(file, source, data).script.cachedDataRejected, false);
});

test("a cache is refused for another source of the same length, damaged bytes, a cut file or another format", () => {
  const { script } = runCommonJs(file, source, undefined);
  const cacheFile = codeCacheFile(source, script.createCachedData());
  // V8 would take this one (it checks the length only) and run the old code.
  assert.equal(verifiedCache(source.replace("2 * n", "3 * n"), cacheFile), undefined);
  const damaged = Buffer.from(cacheFile);
  damaged[damaged.length - 10] = (damaged[damaged.length - 10] ?? 0) ^ 0xff;
  assert.equal(verifiedCache(source, damaged), undefined);
  assert.equal(verifiedCache(source, cacheFile.subarray(0, cacheFile.length - 1)), undefined);
  assert.equal(verifiedCache(source, cacheFile.subarray(0, 40)), undefined);
  assert.equal(verifiedCache(source, Buffer.concat([Buffer.from("x"), cacheFile.subarray(1)])), undefined);
});

test("a source file's text: ASCII as it is, other bytes decoded as UTF-8; the cache verifies against the file's bytes", () => {
  assert.equal(sourceText(Buffer.from(source)), source);
  const utf8 = `"use strict";\nexports.dash = "\u2014 \u00e9";\n`;
  assert.equal(sourceText(Buffer.from(utf8, "utf8")), utf8);
  const { script } = runCommonJs(file, utf8, undefined);
  const cacheFile = codeCacheFile(utf8, script.createCachedData());
  assert.ok(verifiedCache(Buffer.from(utf8, "utf8"), cacheFile) !== undefined);
  assert.equal(verifiedCache(Buffer.from(utf8, "latin1"), cacheFile), undefined);
});

test("loadServe runs serve.cjs beside the main module, with or without a usable cache", async () => {
  const main = pathToFileURL(join(dir, "main.js")).href;
  const serve = join(dir, "serve.cjs");
  const serveSource = `"use strict";\nexports.runServe = async (args) => args.length;\n`;
  writeFileSync(serve, serveSource);
  const cjs = { underCoverage: false };
  assert.equal(await (await loadServe(main, cjs)).runServe(["a", "b"]), 2);
  writeFileSync(`${serve}.cache`, codeCacheFile(source, Buffer.from("not a V8 cache")));
  assert.equal(await (await loadServe(main, cjs)).runServe(["a"]), 1);
  writeFileSync(`${serve}.cache`, codeCacheFile(serveSource, runCommonJs(serve, serveSource, undefined).script.createCachedData()));
  assert.equal(await (await loadServe(main, cjs)).runServe([]), 0);
});

test("under V8 coverage loadServe imports the ES module even with serve.cjs beside it", async () => {
  const main = pathToFileURL(join(dir, "main.js")).href;
  writeFileSync(join(dir, "serve.cjs"), `"use strict";\nexports.runServe = async () => -1;\n`);
  const esm = await import("./commands/serve.ts");
  assert.equal((await loadServe(main, { underCoverage: true })).runServe, esm.runServe);
  assert.equal(coverageCollected({ NODE_V8_COVERAGE: "/tmp/cov" }), true);
  assert.equal(coverageCollected({ NODE_V8_COVERAGE: "" }), false);
  assert.equal(coverageCollected({}), false);
});

test("without serve.cjs beside it, loadServe imports the ES module", async () => {
  const mod = await loadServe(pathToFileURL(join(dir, "sub", "main.js")).href);
  assert.equal(typeof mod.runServe, "function");
});
