// The bytes of a snapshot, made a slice at a time so that a member with a large store is
// not frozen while they are made. The text is exactly JSON.stringify(image) for the image
// of the moment writing began: the v2 store's image (a string inside it) comes from a
// StoreImageWriter slice by slice and is escaped as it comes, so no string of the whole
// image is ever built (joining or escaping a 30 MB string were single 50-100 ms calls).

import { setImmediate } from "node:timers/promises";
import { performance } from "node:perf_hooks";
import type { StoreImageWriter } from "../store/v2/index.ts";
import type { SnapshotImage } from "./bootstrap.ts";

export interface WriteSnapshotOptions {
  /** The v2 store's image in progress (V2Store.beginImage at the snapshot's index). */
  writer: StoreImageWriter;
  /** The other parts of the image, taken at the same index (copies: written at the end). */
  rest: Omit<SnapshotImage, "store">;
  /** True when the snapshot is no longer wanted (stop, a snapshot installed from the leader). */
  cancelled(): boolean;
  /** Work between two turns of the event loop (default 5 ms). */
  sliceMs?: number;
  /** How a turn is given to the event loop (tests count them). */
  yieldTurn?: () => Promise<unknown>;
}

/** The snapshot bytes, or undefined when cancelled on the way. */
export async function writeSnapshotData(o: WriteSnapshotOptions): Promise<Buffer | undefined> {
  const sliceMs = o.sliceMs ?? 5;
  const yieldTurn = o.yieldTurn ?? (() => setImmediate());
  const bufs: Buffer[] = [Buffer.from('{"store":"')];
  for (;;) {
    const until = performance.now() + sliceMs;
    let done = false;
    do done = o.writer.step(256);
    while (!done && performance.now() < until);
    // Whole JSON tokens, so no surrogate pair is split between two escapes.
    bufs.push(Buffer.from(JSON.stringify(o.writer.take()).slice(1, -1)));
    if (done) break;
    await yieldTurn();
    if (o.cancelled()) return undefined;
  }
  let tail = '"';
  for (const [k, v] of Object.entries(o.rest)) if (v !== undefined) tail += `,${JSON.stringify(k)}:${JSON.stringify(v)}`;
  bufs.push(Buffer.from(tail + "}"));
  return Buffer.concat(bufs);
}
