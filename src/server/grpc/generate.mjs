// Regenerates ./gen/ from the .proto files in ./proto/ (run: npm run gen:grpc).
// The .proto files are etcd's and gRPC's as published; protoc-gen-es does not need gogoproto
// or google.api annotations, so a copy without them (import lines and `option (...)`
// statements, including the multi-line `option (google.api.http) = {...};` blocks) is
// written to a temporary directory and compiled from there with buf.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const protoDir = join(here, "proto");
const outDir = join(here, "gen");

function* protoFiles(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* protoFiles(p);
    else if (name.endsWith(".proto")) yield p;
  }
}

/** Drops gogoproto / google.api imports and every custom `option (...)`, also inside fields. */
export function stripAnnotations(text) {
  let out = text.replace(/^import "(gogoproto|google\/api)\/[^"]+";\n/gm, "");
  // `option (x) = value;` or `option (x) = { ... nested { } ... };`: braces counted by hand.
  for (let at = out.search(/option \(/); at >= 0; at = out.search(/option \(/)) {
    let i = at;
    let depth = 0;
    for (; i < out.length; i++) {
      const c = out[i];
      if (c === "{") depth++;
      else if (c === "}") depth--;
      else if (c === ";" && depth === 0) break;
    }
    out = out.slice(0, at) + out.slice(i + 1);
  }
  // field options such as `[(gogoproto.nullable) = false]`
  return out.replace(/\s*\[\([a-z_.]+\)[^\]]*\]/g, "");
}

const tmp = mkdtempSync(join(tmpdir(), "kvctl-proto-"));
try {
  for (const file of protoFiles(protoDir)) {
    const dest = join(tmp, relative(protoDir, file));
    mkdirSync(dirname(dest), { recursive: true });
    writeFileSync(dest, stripAnnotations(readFileSync(file, "utf8")));
  }
  writeFileSync(join(tmp, "buf.yaml"), "version: v2\n");
  const template = JSON.stringify({
    version: "v2",
    plugins: [{ local: join(here, "../../../node_modules/.bin/protoc-gen-es"), out: outDir, opt: ["target=ts", "import_extension=ts", "ts_nocheck=true"] }],
  });
  rmSync(outDir, { recursive: true, force: true });
  execFileSync(join(here, "../../../node_modules/.bin/buf"), ["generate", tmp, "--template", template], { stdio: "inherit" });
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
