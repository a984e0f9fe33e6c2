// Disk stalls, read from the member logs: the WAL logs every fdatasync over 1 s as
// `slow fdatasync` (src/wal). A candidate's vote and a follower's ack wait for their
// fdatasync, so a stalled disk stretches an election whatever Raft does; the summary says
// when a slow election overlapped a stall instead of leaving the two to be told apart by
// hand. (All members of a run share one disk; a real cluster would not. On this machine
// such a stall, every member's fdatasync returning in the same few ms after 1.1–1.8 s,
// came twice in a 30-minute run.)
import { readFile } from "node:fs/promises";
import { join } from "node:path";

export interface DiskStall {
  member: string;
  /** When the fdatasync returned (ms since the epoch). */
  endMs: number;
  tookMs: number;
}

/** Every `slow fdatasync` line of one member's log (JSON lines; anything else is skipped). */
export function parseSlowSyncs(member: string, text: string): DiskStall[] {
  const out: DiskStall[] = [];
  for (const line of text.split("\n")) {
    if (!line.includes('"slow fdatasync"')) continue;
    try {
      const j = JSON.parse(line) as { msg?: unknown; ts?: unknown; took?: unknown };
      const took = typeof j.took === "string" ? /^(\d+(?:\.\d+)?)s$/.exec(j.took) : null;
      const end = typeof j.ts === "string" ? Date.parse(j.ts) : NaN;
      if (j.msg !== "slow fdatasync" || took === null || Number.isNaN(end)) continue;
      out.push({ member, endMs: end, tookMs: Number(took[1]) * 1000 });
    } catch {
      // a line cut by a kill -9: not a stall we can place
    }
  }
  return out;
}

/** The stalls that were under way at some moment of [fromMs, toMs]. */
export function stallsDuring(stalls: readonly DiskStall[], fromMs: number, toMs: number): DiskStall[] {
  return stalls.filter((s) => s.endMs - s.tookMs <= toMs && s.endMs >= fromMs);
}

/**
 * Drops the stalls of a member that was SIGSTOPped meanwhile: its fdatasync's time includes
 * the pause (in the 30-minute run, 39 of 47 `slow fdatasync` lines were such).
 */
export function withoutPauses(stalls: readonly DiskStall[], pauses: ReadonlyArray<{ member: string; fromMs: number; toMs: number }>): DiskStall[] {
  return stalls.filter((s) => !pauses.some((p) => p.member === s.member && p.fromMs <= s.endMs && p.toMs >= s.endMs - s.tookMs));
}

export function describeStall(s: DiskStall): string {
  return `${s.member} fdatasync took ${(s.tookMs / 1000).toFixed(3)} s`;
}

/** The stalls in `<root>/<name>.log` of every member (a missing log has none). */
export async function readDiskStalls(root: string, members: readonly string[]): Promise<DiskStall[]> {
  const all = await Promise.all(members.map(async (m) => parseSlowSyncs(m, await readFile(join(root, `${m}.log`), "utf8").catch(() => ""))));
  return all.flat().sort((a, b) => a.endMs - b.endMs);
}
