// Public surface of the v2 store (the folder boundary: import from here).
export { V2Store, type ExpireOption, type V2StoreOptions } from "./store.ts";
export type { StoreImageWriter } from "./image-writer.ts";
export { IMAGE_VERSION, LINES_VERSION, ImageLines, decodeImage, decodeImageLines, type ImageVersion, type StoreImage } from "./snapshot.ts";
export { Action, type V2Event, type V2Watcher, type WatchSink } from "./event.ts";
export { HISTORY_CAPACITY } from "./event-history.ts";
export { formatRfc3339Nano, ttlSeconds } from "./format-time.ts";
export { cleanPath, compareKeys } from "./path.ts";
