// The v2 store image: the tree, the index, TTLs and the event history as one JSON text
// (etcd's Save/Recovery). Stats and watchers are not part of it.
//
// Format (version 1), compact because a snapshot may hold 100k+ keys:
//   {"v":1,"index":N,"ns":["/1",...],"root":NODE,"history":[EVENT,...]}
//   NODE  = [name, createdIndex, modifiedIndex, expireTime, value]        (a file)
//         | [name, createdIndex, modifiedIndex, expireTime, [NODE,...]]  (a directory)
//   EVENT = [action, node, prevNode or 0, refresh 0|1]   (oldest first)
// expireTime is ms since the epoch (0 = permanent), or a decimal string of ns since the
// epoch when the time has nanoseconds within its millisecond (see expireField). Children are written in Map order and
// read back in the same order, so save() after recover() gives the same bytes.

import type { V2Action, V2NodeJSON } from "../../api/v2-types.ts";
import { Action, type V2Event } from "./event.ts";
import { IMAGE_VERSION, StoreImageWriter, type StoreImage } from "./image-writer.ts";
import { V2Node } from "./node.ts";

export { IMAGE_VERSION, StoreImageWriter, type StoreImage } from "./image-writer.ts";

/** Serializes the store state in one go (StoreImageWriter does it a slice at a time). */
export function encodeImage(img: StoreImage): string {
  return new StoreImageWriter(img).finish();
}

/** Parses an image; throws Error "Cannot parse v2 store image: ..." on malformed input. */
export function decodeImage(text: string): StoreImage {
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
