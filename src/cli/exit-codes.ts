// Exit codes, exactly etcdctl v2's (ctlv2/command/error.go): scripts branch on them.

export const ExitCode = {
  Success: 0,
  /** Missing or malformed arguments, unknown flags; also etcdctl's plain os.Exit(1) paths. */
  BadArgs: 1,
  /** No endpoint reachable while synchronising the cluster (dial/read errors, timeouts). */
  BadConnection: 2,
  /** Kept for etcdctl parity; urfave/cli also exits 3 for an unknown command. */
  BadAuth: 3,
  /** The request failed: a v2 error (key not found, compare failed …) or no endpoint answered. */
  ServerError: 4,
  /** cluster-health found a member that is not healthy. */
  ClusterNotHealthy: 5,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/**
 * Thrown by command code to end the process: `stderr` is printed as is (it already
 * carries etcdctl's wording, e.g. `Error:  100: Key not found (/foo) [3]`).
 */
export class CliExit extends Error {
  readonly exitCode: number;
  readonly stderr: string;

  constructor(exitCode: number, stderr: string) {
    super(stderr);
    this.name = "CliExit";
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

/** A command-line mistake: printed as `Incorrect Usage: <message>`, exit 1. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}
