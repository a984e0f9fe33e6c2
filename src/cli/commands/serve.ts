// `kvctl serve`: the only CLI module that imports server code (DESIGN.md §2).
import { openSync, writeSync } from "node:fs";
import { ConfigError, parseServeArgs } from "../../server/config.ts";
import { createLogger } from "../../server/logger.ts";

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
      return 2;
    }
    throw err;
  }
  if (config === null) return 0;
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
  const { startServer } = await import("../../server/index.ts");
  // --proxy on|readonly (or a proxy's data dir): a v2 proxy instead of a member.
  const { startProxyIfConfigured } = await import("../../server/proxy/index.ts");
  let running;
  try {
    running = (await startProxyIfConfigured(config, log)) ?? (await startServer(config, log));
  } catch (err) {
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
