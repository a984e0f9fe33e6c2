// The backend's public surface (the server imports from here).
export { MvccDb } from "./mvcc-db.ts";
export type { DbReader, MvccDbOptions } from "./mvcc-db.ts";

