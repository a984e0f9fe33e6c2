// The error and notice types of the serve configuration, in a module of their own so that
// config.ts and config-file.ts share them without importing each other.

export class ConfigError extends Error {
  override name = "ConfigError";
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
