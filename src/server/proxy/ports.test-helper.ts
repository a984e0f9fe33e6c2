// Ports for this folder's unit tests: each test file has its own slice of the range given
// to this work (23400-23449), so files running in parallel never race for one.
import { createServer } from "node:net";

/** A port of [lo, hi] that is free now (probed by binding), never the same one twice. */
export function portPicker(lo: number, hi: number): () => Promise<number> {
  let next = lo;
  return async () => {
    while (next <= hi) {
      const port = next++;
      const free = await new Promise<boolean>((resolve) => {
        const srv = createServer();
        srv.once("error", () => resolve(false));
        srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
      });
      if (free) return port;
    }
    throw new Error(`no free port left in ${lo}-${hi}`);
  };
}
