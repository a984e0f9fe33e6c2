// What a member loads before it serves its peers: `kvctl serve` statically, then
// listener.ts (bindListeners) and index.ts (startServer). The gRPC code (@bufbuild/protobuf
// and the generated descriptors, 45-60 ms of a restart's CPU) must wait for client-api.ts,
// which index.ts loads once the peer listener serves.
import { test } from "node:test";
import assert from "node:assert/strict";
import { resolve } from "node:path";
import { build } from "esbuild";

const root = resolve(import.meta.dirname, "../..");
const ROOTS = ["src/cli/commands/serve.ts", "src/server/http/listener.ts", "src/server/index.ts"];

test("the modules a member loads before it serves its peers do not include the gRPC code", async () => {
  const { metafile } = await build({
    absWorkingDir: root,
    entryPoints: ROOTS,
    bundle: true,
    write: false,
    splitting: true,
    format: "esm",
    platform: "node",
    outdir: "out",
    metafile: true,
    packages: "external",
    logLevel: "silent",
  });
  // Static imports only: dynamic ones are the lazy loads.
  const via = new Map<string, string | undefined>(ROOTS.map((r) => [r, undefined]));
  const queue = [...ROOTS];
  for (let f = queue.shift(); f !== undefined; f = queue.shift()) {
    for (const i of metafile.inputs[f]?.imports ?? []) {
      if (i.kind !== "import-statement" || via.has(i.path)) continue;
      via.set(i.path, f);
      if (!i.external) queue.push(i.path);
    }
  }
  const chain = (f: string): string => {
    const out = [f];
    for (let x = via.get(f); x !== undefined; x = via.get(x)) out.push(x);
    return out.join(" <- ");
  };
  assert.ok(via.has("src/server/kv-server.ts"), "the walk reaches the server");
  const grpc = [...via.keys()].filter((f) => f.startsWith("@bufbuild/") || f.includes("/grpc/gen/"));
  assert.deepEqual(grpc.map(chain), []);
});
