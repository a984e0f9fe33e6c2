// sorted-btree is CommonJS with the class on `exports.default`. It is loaded with require():
// importing a CommonJS package from ESM makes Node scan its 74 KB source for export names
// first (cjs-module-lexer), which with @node-rs/crc32 (wal/crc32c.ts) took 26-36 ms of every
// member's start-up, against 5-6 ms for both by require().
import { createRequire } from "node:module";

type BTreeModule = typeof import("sorted-btree");
type BTreeClass = BTreeModule["default"];

const requireCjs = createRequire(import.meta.url);

export const BTree: BTreeClass = (requireCjs("sorted-btree") as BTreeModule).default;
export type BTree<K, V> = InstanceType<typeof BTree<K, V>>;
