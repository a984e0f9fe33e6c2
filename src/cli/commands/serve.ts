// `kvctl serve`: the only CLI module that imports server code (DESIGN.md §2).
import { ConfigError, parseServeArgs } from "../../server/config.ts";
import { createLogger } from "../../server/logger.ts";

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
  const log = createLogger(config.logLevel);
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
