// Loads `kvctl serve`. From the bundle, the server is one CommonJS file beside this chunk
// (dist/bundle/cli/serve.cjs, scripts/bundle.mjs) compiled through vm.Script with the V8
// code cache the build wrote next to it (serve.cjs.cache): Node 20 has no code cache for
// ES modules. Compiling the ~650 KB of chunks a member runs before it serves its peers was
// ~25 ms of a restart's CPU at load 8; the 1.2 MB file compiles in ~10 ms from the cache
// (figures in scripts/bundle.mjs). Anywhere else (dist/cli, tsx) the ES module is
// imported as before.
//
// The cache is used only when its header matches: V8 checks the source's length but not
// its bytes, and crashes on a cache whose payload is damaged. A cache V8 itself refuses
// (another Node or V8 flags) is ignored: the file compiles as without one.
import { isAscii } from "node:buffer";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import Module, { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

export interface ServeModule {
  runServe(args: string[]): Promise<number>;
}

/** Header of serve.cjs.cache, written the same way by scripts/bundle.mjs (codeCacheFile). */
const MAGIC = "kvctl-code-cache-1\n";
const HASH_BYTES = 32;

function sha256(data: string | Uint8Array): Buffer {
  return createHash("sha256").update(data).digest();
}

/**
 * The V8 cache data in `file` if it was made from `source` (its text, or the bytes of its
 * UTF-8 file: the same hash) and is intact, else undefined.
 */
export function verifiedCache(source: string | Uint8Array, file: Buffer): Buffer | undefined {
  const head = MAGIC.length + 2 * HASH_BYTES;
  if (file.length <= head || file.toString("latin1", 0, MAGIC.length) !== MAGIC) return undefined;
  const data = file.subarray(head);
  const ok = sha256(source).equals(file.subarray(MAGIC.length, MAGIC.length + HASH_BYTES)) && sha256(data).equals(file.subarray(MAGIC.length + HASH_BYTES, head));
  return ok ? data : undefined;
}

/** The cache file's bytes for V8 cache `data` made from `source`. */
export function codeCacheFile(source: string, data: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(MAGIC, "latin1"), sha256(source), sha256(data), data]);
}

/** Compiles and runs a CommonJS file as Node's loader would, with `cachedData` if given. */
export function runCommonJs(file: string, source: string, cachedData: Buffer | undefined): { exports: unknown; script: Script } {
  const script = new Script(Module.wrap(source), { filename: file, ...(cachedData === undefined ? {} : { cachedData }) });
  const wrapper = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: { exports: unknown }, filename: string, dirname: string) => void;
  const module: { exports: unknown } = { exports: {} };
  wrapper.call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
  return { exports: module.exports, script };
}

/**
 * A source file's text. serve.cjs is ASCII (scripts/bundle.mjs sees to it), read as latin1,
 * which is the same text for ASCII: Node decoded its 1.4 MB as UTF-8 in 3.2 ms at best (a
 * few non-ASCII characters in comments sent the whole file down the slow path), as latin1 in
 * 0.2 ms. A file with other bytes is decoded as UTF-8.
 */
export function sourceText(bytes: Buffer): string {
  return bytes.toString(isAscii(bytes) ? "latin1" : "utf8");
}

function readCache(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

/**
 * True when V8 coverage is being collected (c8 sets NODE_V8_COVERAGE). Coverage of a script
 * compiled through vm.Script does not map back to src/: c8 then reported every line of the
 * server as covered, so under coverage the ES chunks are imported, as before serve.cjs.
 */
export function coverageCollected(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env["NODE_V8_COVERAGE"] ?? "") !== "";
}

/** `kvctl serve`'s module: the CommonJS bundle beside `mainUrl` if there is one (and no coverage is collected). */
export async function loadServe(mainUrl: string, opts: { underCoverage?: boolean } = {}): Promise<ServeModule> {
  const file = fileURLToPath(new URL("./serve.cjs", mainUrl));
  if (!existsSync(file) || (opts.underCoverage ?? coverageCollected())) return import("./commands/serve.ts");
  const bytes = readFileSync(file);
  const cache = readCache(`${file}.cache`);
  // The cache's hash is checked against the bytes: hashing the text would encode it again.
  return runCommonJs(file, sourceText(bytes), cache === undefined ? undefined : verifiedCache(bytes, cache)).exports as ServeModule;
}
