// The backend's public surface (the server imports from here).
export { DEFAULT_COMMIT_DELAY_MS, DEFAULT_COMMIT_LIMIT, MvccDb } from "./mvcc-db.ts";
export type { DbReader, MvccDbOptions } from "./mvcc-db.ts";

