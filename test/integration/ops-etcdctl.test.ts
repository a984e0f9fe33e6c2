// etcd's operations procedures driven by etcdctl 3.4.23 against `kvctl serve`
// (test/ops/ops.sh: runtime reconfiguration, maintenance and quota, disaster recovery,
// restarts): every step's line must be the one etcd 3.4.23 printed (ops.etcd.txt), except
// the differences listed, with their reasons, in known-differences.txt; a new difference,
// or a known one gone, fails. CI runs the "maint" section (12 s: endpoint status/health,
// move-leader, compaction, defrag, the NOSPACE alarm); OPS_SECTIONS="reconfig maint dr
// restart" runs them all (90 s). Skipped without etcdctl, jq, perl or python3.
//
// To record etcd's output again (installed as `etcd`), see test/ops/README.md.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { portIn } from "../helpers/ports.ts";
import { runProcess } from "../helpers/run-process.ts";
import { repoRoot } from "../helpers/server.ts";

const here = join(repoRoot, "test", "ops");
const sections = (process.env["OPS_SECTIONS"] ?? "maint").split(/\s+/).filter((s) => s !== "");
function unavailable(): string | false {
  for (const [cmd, args] of [["etcdctl", ["version"]], ["jq", ["--version"]], ["perl", ["-v"]], ["python3", ["--version"]]] as const) {
    const r = spawnSync(cmd, args, { encoding: "utf8" });
    if (r.error !== undefined || r.status !== 0) return `no ${cmd}`;
  }
  return false;
}

/** The section a line belongs to: its "[section]" after "## " or "< "/"> " (a known difference). */
function sectionOf(line: string): string | undefined {
  return /^(?:## |[<>] )?\[(\w+)\] /.exec(line)?.[1];
}

/** The lines of the chosen sections, without the info lines (sizes, times). */
function pick(output: string): string[] {
  return output.split("\n").filter((l) => !l.startsWith("# info") && sections.includes(sectionOf(l) ?? ""));
}

/** A port base with the 40 ports ops.sh uses free. */
async function portBase(): Promise<number> {
  for (let base = 24100; base < 24900; base += 50) {
    try {
      for (let p = base; p < base + 40; p++) await portIn([p, p]);
      return base;
    } catch {
      // one taken: the next block
    }
  }
  throw new Error("no 40 free ports in 24100-24900");
}

test(`etcd's operations procedures with etcdctl against kvctl (${sections.join(", ")})`, { skip: unavailable() || undefined, timeout: 400_000 }, async () => {
  const base = await portBase();
  const r = await runProcess(join(here, "ops.sh"), ["kvctl", String(base), sections.join(" ")], { cwd: repoRoot, env: process.env, timeoutMs: 380_000 });
  assert.equal(r.code, 0, r.stderr);
  const expected = pick(readFileSync(join(here, "ops.etcd.txt"), "utf8"));
  const got = pick(r.stdout);
  const gotSet = new Set(got);
  const expectedSet = new Set(expected);
  // The differences as `diff` would list them: etcd's lines kvctl did not print, kvctl's etcd did not.
  const differences = [...expected.filter((l) => !gotSet.has(l)).map((l) => `< ${l}`), ...got.filter((l) => !expectedSet.has(l)).map((l) => `> ${l}`)];
  const known = readFileSync(join(here, "known-differences.txt"), "utf8")
    .split("\n")
    .filter((l) => (l.startsWith("< ") || l.startsWith("> ")) && sections.includes(sectionOf(l) ?? ""));
  assert.deepEqual(differences.filter((l) => !known.includes(l)), [], "differences from etcd 3.4.23 not in known-differences.txt");
  assert.deepEqual(known.filter((l) => !differences.includes(l)), [], "known differences that no longer occur: take them out of known-differences.txt");
  assert.deepEqual(got.filter((l) => l.startsWith("## ")), expected.filter((l) => l.startsWith("## ")), "the same steps ran");
});
