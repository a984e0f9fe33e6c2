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

/** The range `variable` names ("lo-hi"), else `fallback`; undefined when neither gives one. */
export function portRange(variable: string, fallback?: [number, number]): [number, number] | undefined {
  const m = /^(\d+)-(\d+)$/.exec(process.env[variable] ?? "");
  return m === null ? fallback : [Number(m[1]), Number(m[2])];
}

/** A free port of [lo, hi], from a random start so that processes sharing the range seldom probe the same one first. */
export async function portIn([lo, hi]: [number, number]): Promise<number> {
  const start = Math.floor(Math.random() * (hi - lo + 1));
  for (let i = 0; i <= hi - lo; i++) {
    const port = lo + ((start + i) % (hi - lo + 1));
    if (taken.has(port)) continue;
    if (await canBind(port)) {
      taken.add(port);
      return port;
    }
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
