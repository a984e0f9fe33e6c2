// Bundles the CLI's own modules (src/cli/main.ts and everything of ours it loads, lazily
// loaded ones in chunks of their own) into dist/bundle/cli/, which bin/kvctl runs. Why: a
// member's start-up was mostly Node's ESM loader resolving and compiling ~140 modules one
// by one. Measured on two cores in alternating runs, spawn to first answer of one member:
// 294-309 ms and 320-340 ms of CPU unbundled, 162-232 ms and 180-220 ms bundled; three
// members started together answer about 130 ms sooner. Client commands were already lean
// (lazy imports) and are unchanged.
//
// Packages stay in node_modules (imported as they are): a member loads only sorted-btree
// and @node-rs/crc32 (a native binary) at start, and the coverage of tests that run the
// bundle maps back to src/ alone.
//
// The chunks sit three directories below the package root, as src/cli/commands/*.ts do:
// the package-relative paths in version.ts and completion.ts (package.json, completions/)
// resolve the same from both.
import { rmSync } from "node:fs";
import { build } from "esbuild";

// Chunk names carry content hashes: without this, every build would leave the previous
// chunks beside the new ones.
rmSync("dist/bundle", { recursive: true, force: true });

await build({
  entryPoints: ["src/cli/main.ts"],
  outdir: "dist/bundle/cli",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  sourcemap: true,
  packages: "external",
  logLevel: "warning",
});
