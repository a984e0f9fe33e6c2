// Bundles the CLI (src/cli/main.ts and everything it loads, lazily loaded modules in chunks
// of their own) into dist/bundle/cli/, which bin/kvctl runs. Why: Node's module loader
// resolving and compiling modules one file at a time was most of a member's start-up.
// Measured on two cores in alternating runs, spawn to first answer of one member:
// 294-309 ms and 320-340 ms of CPU unbundled, 162-232 ms and 180-220 ms with our own
// modules bundled; three members started together answer about 130 ms sooner.
//
// The pure-JS packages are bundled too (@bufbuild/protobuf, chalk, ora and theirs): a
// restarting member loaded @bufbuild/protobuf's ~50 ES modules one by one. Restart of one
// member of a 3-member cluster (existing data dir), 14 rounds alternating with the build
// that kept every package external, load average 4-9, medians: spawn to "serving peer
// traffic" 1050 -> 708 ms, main-thread CPU to that point 553 -> 428 ms (with yaml loaded
// only for --config-file, below). `kvctl get` / `kvctl v3 get`: the same CPU (ratio
// 1.01 / 1.02 over 15 pairs) and peak RSS (46 / 50 MiB). Packages stay
// external (loaded from node_modules as they are) when they load a native binary or
// resolve files at run time: lmdb and @node-rs/crc32 (.node binaries), yargs (its locale
// files, by path from its own module); and those required at run time, which esbuild
// leaves alone: sorted-btree (src/server/lease-deadlines.ts), yaml (only when a
// --config-file is read, src/server/config-file.ts); node-forge is loaded only to issue
// auto-TLS certificates.
//
// `kvctl serve` is also built as one CommonJS file, dist/bundle/cli/serve.cjs, with a V8
// code cache beside it (serve.cjs.cache, made here by running its module body once):
// src/cli/serve-bundle.ts compiles it through vm.Script with that cache, which Node 20
// cannot do for ES modules. Compiling the chunks a member runs before it serves its peers
// (~650 KB) was ~25 ms of CPU at load 8; serve.cjs (1.2 MB, the client API included, its
// modules still evaluated only when imported) compiles in ~10 ms from the cache, ~40 ms
// without. Restart of one member of 3, alternating with the chunks-only build, load 8-12:
// main-thread CPU to "serving peer traffic" paired medians -48 ms (12 rounds) and -19 ms
// (14 rounds), to the first client answer -60 / -36 ms. A cache another Node's V8 refuses
// costs nothing but the compile it would have saved.
//
// Licences: every bundled package's licence must be in ALLOWED; its licence file (and
// the notices listed in NOTICES) is copied into dist/bundle/THIRD-PARTY-NOTICES.txt.
// Coverage: the source maps name the bundled packages' files too; scripts/test.sh runs c8
// with --exclude-after-remap so that those are left out and only src/ is counted.
//
// The chunks sit three directories below the package root, as src/cli/commands/*.ts do:
// the package-relative paths in version.ts and completion.ts (package.json, completions/)
// resolve the same from both.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const EXTERNAL = ["lmdb", "@node-rs/crc32", "yargs", "node-forge", "sorted-btree"];
const ALLOWED = new Set(["MIT", "ISC", "Apache-2.0", "BSD-3-Clause", "(Apache-2.0 AND BSD-3-Clause)"]);
/** Notices a package carries in its sources rather than in a licence file (the leading comment of each file). */
const NOTICES = { "@bufbuild/protobuf": ["dist/esm/wire/varint.js"] };

// Chunk names carry content hashes: without this, every build would leave the previous
// chunks beside the new ones.
rmSync("dist/bundle", { recursive: true, force: true });

const result = await build({
  entryPoints: ["src/cli/main.ts"],
  outdir: "dist/bundle/cli",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: true,
  external: EXTERNAL,
  metafile: true,
  logLevel: "warning",
});

// A bundled CommonJS module that calls require() gets esbuild's shim, which throws in an ES
// module ("Dynamic require of ... is not supported"). A banner defining `require` in every
// chunk would make it work, but createRequire() cost each client command ~4 MB of peak RSS,
// so such a package is refused here instead (keep it external or load it another way).
for (const out of Object.keys(result.metafile.outputs)) {
  if (out.endsWith(".js") && readFileSync(out, "utf8").includes("Dynamic require of")) throw new Error(`bundle: ${out} calls require() from bundled CommonJS; add that package to EXTERNAL`);
}

// `kvctl serve` also as one CommonJS file, which src/cli/serve-bundle.ts compiles with a V8
// code cache (Node 20 caches no ES module). The same sources and packages as the chunks;
// import.meta.url becomes the file's own URL (the package-relative paths and createRequire
// calls resolve as from the chunks beside it), and the file is strict as ES modules are.
//
// lmdb's JavaScript (and msgpackr, ordered-binary and its other pure-JS dependencies) is
// bundled into serve.cjs too, so that it compiles from the code cache instead of being
// resolved and compiled file by file from node_modules at each start; its native addon is
// still found from lmdb's own directory (LMDB_FILENAME). msgpackr's optional native string
// extractor is left out (MSGPACKR_STUB): kvctl's msgpack values are a few small meta rows,
// which the JavaScript decoder reads as fast, and loading that second addon cost each
// start its own look-up and dlopen.
const SERVE_CJS = "dist/bundle/cli/serve.cjs";
/** lmdb finds its addon (and its require) from its own file: there, not from serve.cjs. */
const LMDB_FILENAME = `var __filename = require.resolve(String("lmdb"));\n`;
const LMDB_CJS = createRequire(import.meta.url).resolve("lmdb");
const MSGPACKR_STUB = "module.exports = undefined;\n";
const serveCjsPlugin = {
  name: "serve-cjs-lmdb",
  setup(b) {
    b.onResolve({ filter: /^msgpackr-extract$/ }, () => ({ path: "msgpackr-extract", namespace: "kvctl-stub" }));
    b.onLoad({ filter: /.*/, namespace: "kvctl-stub" }, () => ({ contents: MSGPACKR_STUB, loader: "js" }));
    b.onLoad({ filter: /[\\/]node_modules[\\/]lmdb[\\/]dist[\\/]index\.cjs$/ }, (args) => ({ contents: LMDB_FILENAME + readFileSync(args.path, "utf8"), loader: "js" }));
    // The ES import of lmdb (src/backend/mvcc-db.ts) bundled as Node's require() would load
    // it: lmdb's CommonJS build, whose addon LMDB_FILENAME finds (its ES build finds it from
    // import.meta.url, here serve.cjs's own).
    b.onResolve({ filter: /^lmdb$/ }, () => ({ path: LMDB_CJS }));
  },
};
const serveCjs = await build({
  entryPoints: ["src/cli/commands/serve.ts"],
  outfile: SERVE_CJS,
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  sourcemap: true,
  external: [...EXTERNAL.filter((e) => e !== "lmdb"), "bun:ffi"],
  plugins: [serveCjsPlugin],
  define: { "import.meta.url": "__kvctl_module_url" },
  banner: { js: `"use strict";\nconst __kvctl_module_url = require("node:url").pathToFileURL(__filename).href;` },
  metafile: true,
  logLevel: "warning",
});

// serve.cjs is kept ASCII, which src/cli/serve-bundle.ts then reads as latin1 (0.2 ms for
// its 1.4 MB; as UTF-8 3.2 ms, a few non-ASCII characters sending the whole file down Node's
// slow path). esbuild escapes strings, regular expressions and identifiers (its ASCII
// charset) but copies comments as they are: there the characters are written as escapes.
const nonAscii = /[^\x00-\x7f]/u;
writeFileSync(SERVE_CJS, readFileSync(SERVE_CJS, "utf8").split("\n").map((line, i) => {
  if (!nonAscii.test(line)) return line;
  if (!/^\s*(\*|\/\/|\/\*)/.test(line)) throw new Error(`bundle: ${SERVE_CJS}:${i + 1} has non-ASCII characters outside a comment`);
  return line.replace(/[^\x00-\x7f]/gu, (c) => `\\u{${c.codePointAt(0).toString(16)}}`);
}).join("\n"));

// Its code cache, made by the Node that builds (another Node's V8 refuses it and the file
// compiles without): the module body is run once, as a member's start runs it, so the
// functions its top level calls are in the cache too. A failure leaves no cache, not a
// failed build.
const loader = Object.entries(result.metafile.outputs).find(([, o]) => o.entryPoint === "src/cli/serve-bundle.ts")?.[0];
const makeCache = loader === undefined ? { status: 1, stderr: "serve-bundle.ts has no chunk of its own" } : spawnSync(process.execPath, ["--input-type=module", "-e", `
  import { readFileSync, writeFileSync } from "node:fs";
  import { codeCacheFile, runCommonJs } from ${JSON.stringify(pathToFileURL(resolve(loader)).href)};
  const file = ${JSON.stringify(resolve(SERVE_CJS))};
  const source = readFileSync(file, "utf8");
  const { script } = runCommonJs(file, source, undefined);
  writeFileSync(file + ".cache", codeCacheFile(source, script.createCachedData()));
  process.exit(0);
`], { encoding: "utf8", timeout: 60_000 });
if (makeCache.status !== 0) {
  rmSync(`${SERVE_CJS}.cache`, { force: true });
  process.stderr.write(`bundle: no code cache for ${SERVE_CJS} (a member compiles it at each start): ${String(makeCache.stderr ?? makeCache.error).trim()}\n`);
}

/** The packages whose files went into the bundle, by name. */
function bundledPackages(inputs) {
  const names = new Set();
  for (const file of Object.keys(inputs)) {
    const m = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
    if (m?.[1] !== undefined) names.add(m[1]);
  }
  return [...names].sort();
}

function mitText(holder) {
  return `Copyright (c) ${holder}\n\nPermission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files (the "Software"), to deal in the Software without restriction, including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is furnished to do so, subject to the following conditions:\n\nThe above copyright notice and this permission notice shall be included in all copies or substantial portions of the Software.\n\nTHE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.`;
}

function leadingComment(text) {
  const lines = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("//")) break;
    lines.push(line.replace(/^\/\/ ?/, ""));
  }
  return lines.join("\n");
}

const parts = ["Third-party software bundled into these files, with its licence terms.\n"];
for (const name of bundledPackages({ ...result.metafile.inputs, ...serveCjs.metafile.inputs })) {
  const dir = join("node_modules", name);
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  if (!ALLOWED.has(pkg.license)) throw new Error(`bundle: ${name} has licence ${pkg.license}, not one of ${[...ALLOWED].join(", ")}`);
  const repo = typeof pkg.repository === "string" ? pkg.repository : (pkg.repository?.url ?? "");
  const texts = readdirSync(dir)
    .filter((f) => /^(licen[cs]e|copying|notice)/i.test(f))
    .map((f) => readFileSync(join(dir, f), "utf8").trim());
  // kvctl itself is Apache-2.0 (package.json): its terms are the ones that package points to.
  if (texts.length === 0 && pkg.license.includes("Apache-2.0")) texts.push("Licensed under the Apache License, Version 2.0: https://www.apache.org/licenses/LICENSE-2.0");
  // weak-lru-cache (lmdb's, in serve.cjs) says "MIT" in its package.json and README only: the MIT terms with its author.
  if (texts.length === 0 && pkg.license === "MIT") texts.push(mitText(typeof pkg.author === "string" ? pkg.author : (pkg.author?.name ?? name)));
  for (const f of NOTICES[name] ?? []) texts.push(leadingComment(readFileSync(join(dir, f), "utf8")).trim());
  if (texts.length === 0) throw new Error(`bundle: ${name} ships no licence file; name one of its notices in NOTICES`);
  parts.push(`${"=".repeat(78)}\n${name}@${pkg.version}, licence ${pkg.license}, ${repo}\n\n${texts.join("\n\n")}\n`);
}
writeFileSync("dist/bundle/THIRD-PARTY-NOTICES.txt", parts.join("\n"));
