// Ports for the servers the tests start: the one allocator behind the unit tests' port
// pickers (server/proxy/ports.test-helper.ts) and test/helpers' freePort() (server.ts),
// reservedPort() (tls-server.ts) and rangePort() (etcd.ts). Ranges come from environment
// variables ("lo-hi") or the caller, so runs that share a machine can be kept apart; a port
// is probed by binding it and never handed out twice by one process.
import { createServer } from "node:net";

const taken = new Set<number>();

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/**
 * How far each lane's copy of a default range lies from the one before: lane 1 takes the
 * tests' 23xxx defaults to 29xxx, which no test names (the fuzzer's 27000-27999 to 33xxx).
 */
export const LANE_PORT_OFFSET = 6000;

/**
 * `range` for this process's lane: scripts/run-lanes.mjs runs files side by side and tells
 * each its lane in TEST_PORT_LANE; lane k's copy of a default range is shifted by k times
 * LANE_PORT_OFFSET, so that two files running at once never probe the same ports (one file's
 * port, probed free and not yet bound by its server, could be handed to the other's).
 */
export function laneRange([lo, hi]: [number, number], env: NodeJS.ProcessEnv = process.env): [number, number] {
  const lane = Number(env["TEST_PORT_LANE"] ?? "0");
  const shift = Number.isInteger(lane) && lane > 0 ? lane * LANE_PORT_OFFSET : 0;
  return [lo + shift, hi + shift];
}

/**
 * The range `variable` names ("lo-hi"), else `fallback` (shifted for the lane, laneRange);
 * undefined when neither gives one. A range given in the environment is taken as it is.
 */
export function portRange(variable: string, fallback?: [number, number]): [number, number] | undefined {
  const m = /^(\d+)-(\d+)$/.exec(process.env[variable] ?? "");
  if (m !== null) return [Number(m[1]), Number(m[2])];
  return fallback === undefined ? undefined : laneRange(fallback);
}

/** A free port of [lo, hi], from a random start so that processes sharing the range seldom probe the same one first. */
export async function portIn([lo, hi]: [number, number]): Promise<number> {
  const start = Math.floor(Math.random() * (hi - lo + 1));
  for (let i = 0; i <= hi - lo; i++) {
    const port = lo + ((start + i) % (hi - lo + 1));
    if (taken.has(port)) continue;
    // Taken before the probe: two calls of one process running at once (tests started
    // side by side) probed the same port across the probe's await, and both got it.
    taken.add(port);
    if (await canBind(port)) return port;
    taken.delete(port);
  }
  throw new Error(`no free port in ${lo}-${hi}`);
}

/** A port the OS finds free (binding port 0). */
export function ephemeralPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
