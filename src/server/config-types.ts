// The error and notice types of the serve configuration, in a module of their own so that
// config.ts and config-file.ts share them without importing each other.

/**
 * Go's flag package refusing the command line: etcd exits 2 for these (its flag set's
 * Parse failed) and 1 for every other configuration error found after parsing (a name
 * missing from --initial-cluster, a bad URL in it, timeouts that do not fit, a config
 * file or an environment variable that does not parse). The wording is Go's own.
 */
const FLAG_SET_REFUSAL = /^(flag provided but not defined: |bad flag syntax: |flag needs an argument: |invalid (boolean )?value .* for flag -)/;

/** A configuration `kvctl serve` refuses to start with; `exitCode` is etcd's for the same refusal. */
export class ConfigError extends Error {
  override name = "ConfigError";
  readonly exitCode: 1 | 2;

  constructor(message: string) {
    super(message);
    this.exitCode = FLAG_SET_REFUSAL.test(message) ? 2 : 1;
  }
}

/**
 * A line to log once the logger exists (configuration is read before it): an etcd flag
 * kvctl accepts without acting on it, a deprecated form, an environment variable used.
 */
export interface ConfigNotice {
  level: "info" | "warn";
  msg: string;
  fields?: Record<string, unknown>;
}
