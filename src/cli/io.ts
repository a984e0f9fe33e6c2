// Where commands write: the process streams in the CLI, buffers in tests. Kept apart
// from context.ts so that `kvctl --version` and help load no client code.

export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
}

export const processIo: Io = {
  stdout: (t) => void process.stdout.write(t),
  stderr: (t) => void process.stderr.write(t),
};
