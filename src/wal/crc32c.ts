// CRC32C from @node-rs/crc32, loaded with require(): the package is CommonJS, and importing
// it from ESM makes Node scan its source for export names first (cjs-module-lexer). With
// sorted-btree (store/v3/btree.ts, same reason) that took 26-36 ms of every member's
// start-up, against 5-6 ms for both by require().
import { createRequire } from "node:module";

type Crc32Module = typeof import("@node-rs/crc32");

const requireCjs = createRequire(import.meta.url);

export const crc32c: Crc32Module["crc32c"] = (requireCjs("@node-rs/crc32") as Crc32Module).crc32c;
