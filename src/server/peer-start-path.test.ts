// What a member loads before it serves its peers: `kvctl serve` statically, then
// listener.ts (bindListeners) and index.ts (startServer). The gRPC code (@bufbuild/protobuf
// and the generated descriptors, 45-60 ms of a restart's CPU) must wait for client-api.ts,
// which index.ts loads once the peer listener serves; the server's TLS modules wait for TLS
// flags or an https:// URL, node:tls and node:https for the first https agent or request.
import { test } from "node:test";
import assert from "node:assert/strict";
import { resolve } from "node:path";
import { build } from "esbuild";

const root = resolve(import.meta.dirname, "../..");
const ROOTS = ["src/cli/commands/serve.ts", "src/server/http/listener.ts", "src/server/index.ts"];

interface Walk {
  /** Each module reached, with the module that first imported it. */
  via: Map<string, string | undefined>;
  /** Each module reached, with every reached module that imports it. */
  importers: Map<string, string[]>;
}

/** The static imports from ROOTS. */
async function staticImports(): Promise<Walk> {
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
  const importers = new Map<string, string[]>();
  const queue = [...ROOTS];
  for (let f = queue.shift(); f !== undefined; f = queue.shift()) {
    for (const i of metafile.inputs[f]?.imports ?? []) {
      if (i.kind !== "import-statement") continue;
      importers.set(i.path, [...(importers.get(i.path) ?? []), f]);
      if (via.has(i.path)) continue;
      via.set(i.path, f);
      if (!i.external) queue.push(i.path);
    }
  }
  return { via, importers };
}
const walk = staticImports();

/** The import chain that brought `f` in, for the failure message. */
function chain(via: Map<string, string | undefined>, f: string): string {
  const out = [f];
  for (let x = via.get(f); x !== undefined; x = via.get(x)) out.push(x);
  return out.join(" <- ");
}

test("the modules a member loads before it serves its peers do not include the gRPC code", async () => {
  const { via } = await walk;
  assert.ok(via.has("src/server/kv-server.ts"), "the walk reaches the server");
  const grpc = [...via.keys()].filter((f) => f.startsWith("@bufbuild/") || f.includes("/grpc/gen/"));
  assert.deepEqual(grpc.map((f) => chain(via, f)), []);
});

test("nor the server's TLS modules, which load only when TLS is configured", async () => {
  const { via, importers } = await walk;
  assert.ok(via.has("src/server/config.ts"), "the walk reaches the configuration");
  const tls = [...via.keys()].filter((f) => f.startsWith("src/server/tls/") && f !== "src/server/tls/configured.ts" && f !== "src/server/tls/cipher-suites.ts");
  assert.deepEqual(tls.map((f) => chain(via, f)), []);
  // Nor node:tls / node:https: the peer client requires them with its first https agent.
  const builtins = ["node:tls", "node:https"].flatMap((m) => (importers.get(m) ?? []).map((f) => `${m} <- ${f}`));
  assert.deepEqual(builtins, []);
});
