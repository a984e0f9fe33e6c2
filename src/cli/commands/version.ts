// version (and --version / -v): etcdctl's two lines, with kvctl's package version.

import { readFileSync } from "node:fs";
import { ExitCode } from "../exit-codes.ts";
import type { Io } from "../context.ts";

/** package.json sits three levels up from src/cli/commands, dist/cli/commands and dist/bundle/cli. */
export function packageVersion(): string {
  try {
    const text = readFileSync(new URL("../../../package.json", import.meta.url), "utf8");
    const v = (JSON.parse(text) as { version?: unknown }).version;
    return typeof v === "string" ? v : "unknown";
  } catch {
    return "unknown";
  }
}

export function versionText(): string {
  return `kvctl version: ${packageVersion()}\nAPI version: 2\n`;
}

export async function run(_inv: unknown, io: Io): Promise<number> {
  io.stdout(versionText());
  return ExitCode.Success;
}
