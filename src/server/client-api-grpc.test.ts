// What a member loads before it answers HTTP clients: client-api.ts (index.ts imports it
// once the peer listener serves). The gRPC code (@bufbuild/protobuf and etcd's generated
// descriptors, ~45 ms of a restart's CPU at load 8) is grpc-api.ts's, which index.ts loads
// once the client listener serves, so v2 and JSON gateway clients do not wait for it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { resolve } from "node:path";
import { build } from "esbuild";

const root = resolve(import.meta.dirname, "../..");

/** Each module statically reachable from `entry`, with the module that first imported it. */
async function staticImports(entry: string): Promise<Map<string, string | undefined>> {
  const { metafile } = await build({ absWorkingDir: root, entryPoints: [entry], bundle: true, write: false, format: "esm", platform: "node", outdir: "out", metafile: true, packages: "external", logLevel: "silent" });
  const via = new Map<string, string | undefined>([[entry, undefined]]);
  const queue = [entry];
  for (let f = queue.shift(); f !== undefined; f = queue.shift()) {
    for (const i of metafile.inputs[f]?.imports ?? []) {
      if (i.kind !== "import-statement" || via.has(i.path)) continue;
      via.set(i.path, f);
      if (!i.external) queue.push(i.path);
    }
  }
  return via;
}

function chain(via: Map<string, string | undefined>, f: string): string {
  const out = [f];
  for (let x = via.get(f); x !== undefined; x = via.get(x)) out.push(x);
  return out.join(" <- ");
}

const isGrpcCode = (f: string): boolean => f.startsWith("@bufbuild/") || f.includes("/grpc/gen/") || f === "src/server/grpc/services.ts";

test("the HTTP client API loads no gRPC code", async () => {
  const via = await staticImports("src/server/client-api.ts");
  assert.ok(via.has("src/server/http/router.ts"), "the walk reaches the router");
  assert.deepEqual([...via.keys()].filter(isGrpcCode).map((f) => chain(via, f)), []);
});

test("grpc-api.ts is where it is", async () => {
  const via = await staticImports("src/server/grpc-api.ts");
  assert.ok([...via.keys()].some((f) => f.startsWith("@bufbuild/")), "grpc-api.ts brings the protobuf code");
});
