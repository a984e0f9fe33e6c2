// The bundle's `kvctl serve` (dist/bundle/cli/serve.cjs, scripts/bundle.mjs) comes with a
// code cache this Node accepts: a cache V8 refused would cost nothing visible but the
// ~50 ms of a restart's CPU it is there to save. Needs `node scripts/bundle.mjs` first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { isAscii } from "node:buffer";
import { readFileSync } from "node:fs";
import Module from "node:module";
import { join, resolve } from "node:path";
import { Script } from "node:vm";
import { verifiedCache } from "../../src/cli/serve-bundle.ts";
import { startServer } from "../helpers/server.ts";

const file = resolve(import.meta.dirname, "../../dist/bundle/cli/serve.cjs");

test("the bundle's serve.cjs has a code cache that matches it and that V8 accepts", () => {
  const source = readFileSync(file, "utf8");
  const data = verifiedCache(source, readFileSync(`${file}.cache`));
  assert.ok(data !== undefined, "the cache's header does not match serve.cjs");
  const script = new Script(Module.wrap(source), { filename: file, cachedData: data });
  assert.equal(script.cachedDataRejected, false);
});

test("serve.cjs is ASCII (read as latin1) and carries lmdb's JavaScript (compiled from the cache, not from node_modules)", () => {
  const bytes = readFileSync(file);
  assert.ok(isAscii(bytes), "serve.cjs has non-ASCII bytes: scripts/bundle.mjs should have escaped them");
  const text = bytes.toString("latin1");
  assert.ok(text.includes("node_modules/lmdb/dist/index.cjs"), "lmdb is not bundled");
  assert.ok(!/\brequire\("lmdb"\)/.test(text), "serve.cjs still requires lmdb at run time");
});

test("serve.cjs sits beside the chunks, so package-relative paths resolve the same", () => {
  const pkg = JSON.parse(readFileSync(join(file, "../../../../package.json"), "utf8")) as { name: string };
  assert.equal(pkg.name, JSON.parse(readFileSync(resolve(import.meta.dirname, "../../package.json"), "utf8")).name);
});

test("a member started from serve.cjs (no coverage collected) serves v2 and v3 requests", async (t) => {
  // Under c8 every other integration test's member imports the ES chunks (serve-bundle.ts:
  // coverage through vm.Script does not map back to src/); this one runs what users run.
  const server = await startServer({ env: { NODE_V8_COVERAGE: "" } });
  t.after(() => server.stop());
  const put = await fetch(`${server.url}/v2/keys/from-cjs`, { method: "PUT", body: "value=1", headers: { "content-type": "application/x-www-form-urlencoded" } });
  assert.equal(put.status, 201);
  const got = (await (await fetch(`${server.url}/v2/keys/from-cjs`)).json()) as { node: { value: string } };
  assert.equal(got.node.value, "1");
  const b64 = (s: string): string => Buffer.from(s).toString("base64");
  const v3 = await fetch(`${server.url}/v3/kv/put`, { method: "POST", body: JSON.stringify({ key: b64("k3"), value: b64("v3") }) });
  assert.equal(v3.status, 200);
  const range = (await (await fetch(`${server.url}/v3/kv/range`, { method: "POST", body: JSON.stringify({ key: b64("k3") }) })).json()) as { kvs: Array<{ value: string }> };
  assert.equal(range.kvs[0]?.value, b64("v3"));
});
