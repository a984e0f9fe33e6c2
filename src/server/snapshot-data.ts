// The bytes of a snapshot, made a slice at a time so that a member with a large store is
// not frozen while they are made. The text is exactly JSON.stringify(image) for the image
// of the moment writing began (v2 children deleted meanwhile come last: image-writer.ts),
// with the parts in the order store, then the rest. The big part comes from a writer that
// goes on while the store changes: the v2 store's image (a string inside the JSON) is
// escaped slice by slice. The v3 key space is not in it: it is its own database file
// (src/backend/), sent to followers beside the snapshot.
// No string of the whole image is ever built (joining or escaping a 30 MB string were
// single 50-100 ms calls), and the bytes are joined a slice at a time.

import { setImmediate } from "node:timers/promises";
import { performance } from "node:perf_hooks";
import type { StoreImageWriter } from "../store/v2/index.ts";
import type { SnapshotImage } from "./bootstrap.ts";

export interface WriteSnapshotOptions {
  /** The v2 store's image in progress (V2Store.beginImage at the snapshot's index). */
  store: StoreImageWriter;
  /** The other parts of the image, taken at the same index (copies: written at the end). */
  rest: Omit<SnapshotImage, "store" | "v3">;
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
  const bufs: Buffer[] = [];
  // Each part is written in slices of about sliceMs; `text` turns what a slice wrote into JSON.
  const parts: { head: string; writer: StoreImageWriter; text: (s: string) => string; tail: string }[] = [
    // Whole JSON tokens from take(), so no surrogate pair is split between two escapes.
    { head: '{"store":"', writer: o.store, text: (s) => JSON.stringify(s).slice(1, -1), tail: '"' },
  ];
  for (const part of parts) {
    bufs.push(Buffer.from(part.head));
    for (;;) {
      const until = performance.now() + sliceMs;
      let done = false;
      do done = part.writer.step(256);
      while (!done && performance.now() < until);
      bufs.push(Buffer.from(part.text(part.writer.take()) + (done ? part.tail : "")));
      if (done) break;
      await yieldTurn();
      if (o.cancelled()) return undefined;
    }
  }
  let tail = "";
  for (const [k, v] of Object.entries(o.rest)) if (v !== undefined) tail += `,${JSON.stringify(k)}:${JSON.stringify(v)}`;
  bufs.push(Buffer.from(tail + "}"));
  // Joined a slice at a time too: Buffer.concat of 125 MB (300k keys) took 100-450 ms in
  // one call, most of it faulting in the new buffer's pages.
  const out = Buffer.allocUnsafe(bufs.reduce((n, b) => n + b.length, 0));
  let at = 0;
  let until = performance.now() + sliceMs;
  for (const b of bufs) {
    at += b.copy(out, at);
    if (performance.now() < until) continue;
    await yieldTurn();
    if (o.cancelled()) return undefined;
    until = performance.now() + sliceMs;
  }
  return out;
}
