// The v2 store image: the tree, the index, TTLs and the event history (etcd's
// Save/Recovery). Stats and watchers are not part of it. Two formats, told apart by their
// first bytes (`{"v":1,` or `{"v":2,`).
//
// Version 2, written by snapshots: one JSON value per line, so that an image larger than
// V8's longest string (0x1fffffe8 characters: about 500 MB) can be written and read back;
// a reader turns one line at a time into a string (ImageLines, decodeImageLines).
//   {"v":2,"index":N,"ns":["/1",...]}
//   [depth, name, createdIndex, modifiedIndex, expireTime]          a directory
//   [depth, name, createdIndex, modifiedIndex, expireTime, value]   a file
//   ...                     the root first (depth 0, name ""), each node after its parent,
//                           a directory's whole subtree before its next sibling
//   {"nodes":COUNT,"history":K}
//   [action, node, prevNode or 0, refresh 0|1]    K lines, oldest first
// Every line ends with "\n" (JSON.stringify escapes the character inside strings, and the
// byte 0x0A is never part of another UTF-8 character). A node's parent is the directory
// most recently listed one level up.
//
// Version 1, the images written before (old snapshots and backups still load), and what
// save() returns, for the state hash whose value must not change:
//   {"v":1,"index":N,"ns":["/1",...],"root":NODE,"history":[EVENT,...]}
//   NODE  = [name, createdIndex, modifiedIndex, expireTime, value]        (a file)
//         | [name, createdIndex, modifiedIndex, expireTime, [NODE,...]]  (a directory)
//   EVENT = [action, node, prevNode or 0, refresh 0|1]   (oldest first)
// expireTime is ms since the epoch (0 = permanent), or a decimal string of ns since the
// epoch when the time has nanoseconds within its millisecond (see expireField). Children are written in Map order and
// read back in the same order, so an image of a recovered store is the same bytes.

import type { V2Action, V2NodeJSON } from "../../api/v2-types.ts";
import { Action, type V2Event } from "./event.ts";
import { IMAGE_VERSION, LINES_VERSION, StoreImageWriter, type ImageVersion, type StoreImage } from "./image-writer.ts";
import { V2Node } from "./node.ts";

export { IMAGE_VERSION, LINES_VERSION, StoreImageWriter, type ImageVersion, type StoreImage } from "./image-writer.ts";

/** Serializes the store state in one go (StoreImageWriter does it a slice at a time). */
export function encodeImage(img: StoreImage, version: ImageVersion = IMAGE_VERSION): string {
  return new StoreImageWriter(img, version).finish();
}

const LINES_PREFIX = Buffer.from(`{"v":${LINES_VERSION},`);

/**
 * Parses an image of either version; throws Error "Cannot parse v2 store image: ..." on
 * malformed input. Version 1 is one JSON text, so it is limited to V8's longest string as
 * it always was; version 2 from bytes is read a line at a time.
 */
export function decodeImage(input: string | Uint8Array): StoreImage {
  if (typeof input === "string") {
    if (!input.startsWith(LINES_PREFIX.toString())) return decodeText(input);
    input = Buffer.from(input);
  }
  const data = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  if (!data.subarray(0, LINES_PREFIX.length).equals(LINES_PREFIX)) return decodeText(data.toString("utf8"));
  const lines = new ImageLines(data);
  const img = decodeImageLines(lines);
  if (lines.next() !== undefined) throw imageError(`data after the image's last line (byte ${lines.offset})`);
  return img;
}

/**
 * The lines of bytes, one string at a time (never a string of more than one line). A
 * last line without its newline means the bytes were cut short.
 */
export class ImageLines {
  readonly #data: Buffer;
  readonly #end: number;
  #at: number;
  readonly #error: (detail: string) => Error;

  constructor(data: Uint8Array, opts: { start?: number; end?: number; error?: (detail: string) => Error } = {}) {
    this.#data = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    this.#at = opts.start ?? 0;
    this.#end = Math.min(opts.end ?? this.#data.length, this.#data.length);
    this.#error = opts.error ?? imageError;
  }

  /** Where the next line begins. */
  get offset(): number {
    return this.#at;
  }

  /** The next line without its newline, or undefined at the end of the bytes. */
  next(): string | undefined {
    if (this.#at >= this.#end) return undefined;
    const nl = this.#data.indexOf(10, this.#at);
    if (nl < 0 || nl >= this.#end) throw this.#error(`truncated: the line at byte ${this.#at} has no end`);
    const line = this.#data.toString("utf8", this.#at, nl);
    this.#at = nl + 1;
    return line;
  }
}

/**
 * Reads a version-2 image's lines from `lines` (and no more: what follows is the caller's),
 * building the tree a node at a time.
 */
export function decodeImageLines(lines: ImageLines): StoreImage {
  const head = parseLine(lines.next(), "the first line");
  if (!isRecord(head)) throw imageError("the first line is not an object");
  if (head["v"] !== LINES_VERSION) throw imageError(`unsupported version ${String(head["v"])}`);
  const index = head["index"];
  if (!isIndex(index)) throw imageError("bad index");
  const ns = head["ns"];
  if (!Array.isArray(ns) || !ns.every((x): x is string => typeof x === "string")) throw imageError("bad ns");
  const rootRaw = parseLine(lines.next(), "the root's line");
  if (!Array.isArray(rootRaw) || rootRaw[0] !== 0 || rootRaw[1] !== "") throw imageError("bad root line");
  if (rootRaw.length !== 5) throw imageError("root is not a directory");
  const root = lineNode(rootRaw as unknown[], null, "/");
  // stack[d]: the directory most recently listed at depth d, parent of the lines at d + 1.
  const stack: V2Node[] = [root];
  let count = 1;
  let line: string | undefined;
  for (;;) {
    line = lines.next();
    if (line === undefined) throw imageError(`truncated: the image ends inside the tree (after ${count} nodes)`);
    if (line.charCodeAt(0) === 123 /* "{": the end of the tree */) break;
    const raw = parseLine(line, `node ${count + 1}`);
    if (!Array.isArray(raw) || (raw.length !== 5 && raw.length !== 6)) throw imageError(`bad node line ${count + 1}`);
    const depth: unknown = raw[0];
    if (typeof depth !== "number" || !Number.isSafeInteger(depth) || depth < 1 || depth > stack.length) {
      throw imageError(`bad depth in node line ${count + 1}`);
    }
    stack.length = depth;
    const dir = stack[depth - 1] as V2Node;
    const name: unknown = raw[1];
    if (typeof name !== "string" || name === "" || name === "." || name === ".." || name.includes("/")) {
      throw imageError(`bad child name under ${dir.path}`);
    }
    const children = dir.children as Map<string, V2Node>;
    if (children.has(name)) throw imageError(`duplicate child ${name} under ${dir.path}`);
    const n = lineNode(raw as unknown[], dir, dir.path === "/" ? "/" + name : dir.path + "/" + name);
    children.set(name, n);
    if (n.children !== null) stack.push(n);
    count++;
  }
  const end = parseLine(line, "the end of the tree");
  if (!isRecord(end) || !isIndex(end["nodes"]) || !isIndex(end["history"])) throw imageError("bad end of the tree");
  if (end["nodes"] !== count) throw imageError(`the tree has ${count} nodes, its end says ${end["nodes"]}`);
  const history: StoreImage["history"] = [];
  for (let i = 0; i < end["history"]; i++) {
    const ev = lines.next();
    if (ev === undefined) throw imageError(`truncated: the image ends inside the history (after ${i} events)`);
    history.push(decodeEvent(parseLine(ev, `history event ${i}`), i));
  }
  return { index, namespaces: ns, root, history };
}

/** A node from its line (depth and name already checked); a 6th field, the value, makes a file. */
function lineNode(raw: unknown[], parent: V2Node | null, path: string): V2Node {
  const [, , createdIndex, modifiedIndex, rawExpire] = raw;
  if (!isIndex(createdIndex) || !isIndex(modifiedIndex)) throw imageError(`bad indexes at ${path}`);
  const { expireTime, expireNs } = decodeExpire(rawExpire, path);
  let n: V2Node;
  if (raw.length === 6) {
    const value = raw[5];
    if (typeof value !== "string") throw imageError(`bad value at ${path}`);
    n = new V2Node({ path, index: createdIndex, parent, expireTime, expireNs, value });
  } else {
    n = new V2Node({ path, index: createdIndex, parent, expireTime, expireNs });
  }
  n.modifiedIndex = modifiedIndex;
  return n;
}

function parseLine(line: string | undefined, what: string): unknown {
  if (line === undefined) throw imageError(`truncated: no ${what}`);
  try {
    return JSON.parse(line);
  } catch (err) {
    throw imageError(`invalid JSON in ${what} (${(err as Error).message})`);
  }
}

function decodeText(text: string): StoreImage {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw imageError(`invalid JSON (${(err as Error).message})`);
  }
  if (!isRecord(raw)) throw imageError("not an object");
  if (raw["v"] !== IMAGE_VERSION) throw imageError(`unsupported version ${String(raw["v"])}`);
  const index = raw["index"];
  if (!isIndex(index)) throw imageError("bad index");
  const ns = raw["ns"];
  if (!Array.isArray(ns) || !ns.every((x): x is string => typeof x === "string")) throw imageError("bad ns");
  const root = decodeNode(raw["root"], null, "/");
  if (root.children === null) throw imageError("root is not a directory");
  const hist = raw["history"];
  if (!Array.isArray(hist)) throw imageError("bad history");
  return { index, namespaces: ns, root, history: hist.map(decodeEvent) };
}

function decodeNode(raw: unknown, parent: V2Node | null, path: string): V2Node {
  if (!Array.isArray(raw) || raw.length !== 5) throw imageError(`bad node at ${path}`);
  const [, createdIndex, modifiedIndex, rawExpire, body] = raw as unknown[];
  if (!isIndex(createdIndex) || !isIndex(modifiedIndex)) throw imageError(`bad indexes at ${path}`);
  const { expireTime, expireNs } = decodeExpire(rawExpire, path);
  if (typeof body === "string") {
    const n = new V2Node({ path, index: createdIndex, parent, expireTime, expireNs, value: body });
    n.modifiedIndex = modifiedIndex;
    return n;
  }
  if (!Array.isArray(body)) throw imageError(`bad node body at ${path}`);
  const dir = new V2Node({ path, index: createdIndex, parent, expireTime, expireNs });
  dir.modifiedIndex = modifiedIndex;
  const children = dir.children as Map<string, V2Node>;
  for (const c of body) {
    const name: unknown = Array.isArray(c) ? c[0] : undefined;
    if (typeof name !== "string" || name === "" || name === "." || name === ".." || name.includes("/")) {
      throw imageError(`bad child name under ${path}`);
    }
    if (children.has(name)) throw imageError(`duplicate child ${name} under ${path}`);
    children.set(name, decodeNode(c, dir, path === "/" ? "/" + name : path + "/" + name));
  }
  return dir;
}

function decodeExpire(raw: unknown, path: string): { expireTime: number; expireNs: number } {
  if (typeof raw === "number" && Number.isFinite(raw)) return { expireTime: raw, expireNs: 0 };
  if (typeof raw === "string" && /^-?[1-9][0-9]{0,18}$/.test(raw)) {
    const t = BigInt(raw);
    let ns = t % 1_000_000n;
    if (ns < 0n) ns += 1_000_000n; // a time before 1970 (a wrapped TTL): ns counts up from the ms below
    return { expireTime: Number((t - ns) / 1_000_000n), expireNs: Number(ns) };
  }
  throw imageError(`bad expireTime at ${path}`);
}

const ACTIONS = new Set<string>(Object.values(Action));

function decodeEvent(raw: unknown, i: number): { event: V2Event; refresh: boolean } {
  if (!Array.isArray(raw) || raw.length !== 4) throw imageError(`bad history event ${i}`);
  const [action, node, prev, refresh] = raw as unknown[];
  if (typeof action !== "string" || !ACTIONS.has(action)) throw imageError(`bad action in history event ${i}`);
  if (!isRecord(node) || !isIndex(node["modifiedIndex"])) throw imageError(`bad node in history event ${i}`);
  if (prev !== 0 && !isRecord(prev)) throw imageError(`bad prevNode in history event ${i}`);
  const n = node as V2NodeJSON;
  const etcdIndex = n.modifiedIndex ?? 0; // every event's index is its op's index
  const event: V2Event =
    prev === 0
      ? { action: action as V2Action, node: n, etcdIndex }
      : { action: action as V2Action, node: n, prevNode: prev as V2NodeJSON, etcdIndex };
  return { event, refresh: refresh === 1 };
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function isIndex(x: unknown): x is number {
  return typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
}

function imageError(detail: string): Error {
  return new Error(`Cannot parse v2 store image: ${detail}`);
}
