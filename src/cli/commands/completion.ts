// completion bash|zsh|fish: prints the script shipped in completions/ (so packagers can
// install the same files directly).

import { readFileSync } from "node:fs";
import { ExitCode } from "../exit-codes.ts";
import { fail, type Io } from "../context.ts";
import type { Invocation } from "../invocation.ts";

export const completionFiles = { bash: "kvctl.bash", zsh: "_kvctl", fish: "kvctl.fish" } as const;

export function completionPath(shell: keyof typeof completionFiles): URL {
  // completions/ is three levels up from src/cli/commands, dist/cli/commands and the
  // bundle's chunks in dist/bundle/cli (scripts/bundle.mjs).
  return new URL(`../../../completions/${completionFiles[shell]}`, import.meta.url);
}

export async function run(inv: Invocation, io: Io): Promise<number> {
  const shell = inv.args[0];
  if (shell !== "bash" && shell !== "zsh" && shell !== "fish") {
    throw fail(ExitCode.BadArgs, new Error("shell required: bash, zsh or fish"));
  }
  io.stdout(readFileSync(completionPath(shell), "utf8"));
  return ExitCode.Success;
}
