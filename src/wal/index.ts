// The wal folder's boundary: what the server may use.
export { Wal, DEFAULT_SEGMENT_BYTES, FILL_AHEAD_BYTES } from "./wal.ts";
export type { WalLogger, WalOpenResult, SaveOptions } from "./wal.ts";
export type { HardState, RetainData, WalEntry, SnapshotRef } from "./record.ts";
export { WalError, WalCorruptError, WalErrorCode } from "./errors.ts";
export { Snapshotter } from "./snapshotter.ts";
export type { SnapshotFile } from "./snapshotter.ts";
