// `kvctl serve`: the only CLI module that imports server code (DESIGN.md §2).
import { existsSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, parseServeArgs } from "../../server/config.ts";
import { createLogger } from "../../server/logger.ts";
import { tuneJitForServer } from "../../server/jit-tiering.ts";
import type { BoundListener } from "../../server/http/listener.ts";

/**
 * One sink for --log-outputs: stderr ("default", and "systemd/journal", which journald
 * collects from a service's stderr anyway), stdout, or files opened for appending (as
 * zap opens them). A file write is synchronous so the last lines before a crash are kept.
 */
function logSink(outputs: readonly string[]): (line: string) => void {
  const writers = outputs.map((o): ((line: string) => void) => {
    if (o === "default" || o === "stderr" || o === "systemd/journal") return (l) => process.stderr.write(l);
    if (o === "stdout") return (l) => process.stdout.write(l);
    const fd = openSync(o, "a", 0o666);
    return (l) => writeSync(fd, l);
  });
  const [only] = writers;
  return writers.length === 1 && only !== undefined ? only : (l) => { for (const w of writers) w(l); };
}

export async function runServe(args: string[]): Promise<number> {
  let config;
  try {
    config = await parseServeArgs(args);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`kvctl serve: ${err.message}\nRun 'kvctl serve --help' for the flags.\n`);
      return err.exitCode;
    }
    throw err;
  }
  if (config === null) return 0;
  tuneJitForServer();
  let sink: (line: string) => void;
  try {
    sink = logSink(config.logOutputs);
  } catch (err) {
    process.stderr.write(`kvctl serve: cannot open a --log-outputs file: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  const log = createLogger(config.logLevel, sink, config.logger === "capnslog" ? "capnslog" : "json");
  // What configuration reading had to say (environment variables used, etcd flags kvctl does not act on, ...).
  for (const n of config.notices) log[n.level](n.msg, n.fields);
  let running;
  let bound: BoundListener[] = [];
  try {
    // --proxy on|readonly (or a proxy's data dir): a v2 proxy instead of a member. A data dir
    // that holds member/ is a member's whatever --proxy says (wantsProxy's first rule): a
    // restart goes on without loading the proxy's modules.
    const proxy = existsSync(join(config.dataDir, "member")) ? undefined : await import("../../server/proxy/index.ts");
    if (proxy?.wantsProxy(config) === true) {
      running = await proxy.startProxy(config, log);
    } else {
      // A member binds its peer and client ports before it loads and starts the server, as
      // etcd binds first: peers and clients that connect meanwhile wait in the accept queue,
      // answered once the member is ready, instead of being refused and backing off.
      const { bindListeners } = await import("../../server/http/listener.ts");
      bound = await bindListeners([...config.listenPeerUrls, ...config.listenClientUrls]);
      const { startServer } = await import("../../server/index.ts");
      try {
        running = await startServer(config, log, bound);
      } catch (err) {
        // etcd: a full discovery token makes this a v2 proxy of the cluster it lists
        // (--discovery-fallback=proxy, the default), else the start fails.
        const { FullClusterError } = await import("../../server/discovery.ts");
        if (!(err instanceof FullClusterError) || config.discoveryFallback !== "proxy") throw err;
        for (const b of bound) b.close();
        bound = [];
        log.info("discovery cluster full, falling back to proxy");
        running = await (await import("../../server/proxy/index.ts")).startProxy(config, log);
      }
    }
  } catch (err) {
    for (const b of bound) b.close();
    log.error("cannot start", { error: err instanceof Error ? err.message : String(err) });
    return 1;
  }
  return await new Promise<number>((resolve) => {
    const onSignal = (sig: NodeJS.Signals): void => {
      log.info("received signal, shutting down", { signal: sig });
      running.stop().then(
        () => resolve(0),
        (err: unknown) => {
          log.error("error during shutdown", { error: String(err) });
          resolve(1);
        },
      );
    };
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  });
}
