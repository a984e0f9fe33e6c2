// Where commands write: the process streams in the CLI, buffers in tests. Kept apart
// from context.ts so that `kvctl --version` and help load no client code.

export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Raw bytes (`v3 -w protobuf`); without it they go to stdout() as latin1 text. */
  stdoutBytes?(bytes: Uint8Array): void;
}

export const processIo: Io = {
  stdout: (t) => void process.stdout.write(t),
  stdoutBytes: (b) => void process.stdout.write(b),
  stderr: (t) => void process.stderr.write(t),
};
