// What a failed run leaves for the reader when its data root is not kept (CI): each member's
// last log lines that tell the cluster's story (raft state changes, elections, snapshots,
// restarts, warnings and errors), so a slow election or a crash can be explained from the
// test output alone.
import { readFile } from "node:fs/promises";
import { join } from "node:path";

const STORY = /became|election|campaign|snapshot|restarted|started|leader|"level":"(warn|error)"/;

/** Up to `lines` story lines of each member's log (`<root>/<name>.log`), prefixed with the member's name. */
export async function memberLogTails(root: string, members: readonly string[], lines: number): Promise<string[]> {
  const out: string[] = [];
  for (const name of members) {
    let text: string;
    try {
      text = await readFile(join(root, `${name}.log`), "utf8");
    } catch {
      continue;
    }
    const story = text.split("\n").filter((l) => STORY.test(l));
    out.push(`${name}.log, last ${Math.min(lines, story.length)} of ${story.length} story lines:`);
    for (const l of story.slice(-lines)) out.push(`  ${name} ${l.length > 300 ? `${l.slice(0, 300)}…` : l}`);
  }
  return out;
}
