// `.snap.broken` files beside a member's snapshots, told at a restart instead of passed
// over. kvctl renames a snapshot that fails its checks; a program that cannot read kvctl's
// format renames intact ones too: `etcdctl backup` run on a kvctl data dir renames every
// `.snap` file `.snap.broken` (it expects etcd's protobuf snapshots). The member then
// restarts from an older snapshot or from the WAL alone, which works while the WAL still
// holds every entry since, and fails once segments below the snapshot were released: both
// are said in the log, with the way back (the intact files renamed back).
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { decodeSnapshot } from "../../wal/snapshotter.ts";

const BROKEN = /^([0-9a-f]{16})-([0-9a-f]{16})\.snap\.broken$/;

export interface BrokenSnapshot {
  name: string;
  index: number;
  /** The file reads as a complete kvctl snapshot: it was renamed by something else. */
  intact: boolean;
}

/** The `.snap.broken` files of `snapDir`, newest first; each is read to tell intact from damaged. */
export async function brokenSnapshots(snapDir: string): Promise<BrokenSnapshot[]> {
  let names: string[];
  try {
    names = await readdir(snapDir);
  } catch {
    return [];
  }
  const out: BrokenSnapshot[] = [];
  for (const name of names) {
    const m = BROKEN.exec(name);
    if (m === null) continue;
    let intact = false;
    try {
      const s = decodeSnapshot(await readFile(join(snapDir, name)));
      intact = s.index === parseInt(m[2]!, 16) && s.term === parseInt(m[1]!, 16);
    } catch {
      intact = false;
    }
    out.push({ name, index: parseInt(m[2]!, 16), intact });
  }
  return out.sort((a, b) => b.index - a.index);
}

/** The intact ones newer than the snapshot used (index 0: none): what the restart passes over. */
export function passedOver(broken: readonly BrokenSnapshot[], usedIndex: number): BrokenSnapshot[] {
  return broken.filter((b) => b.intact && b.index > usedIndex);
}

/** The warning a restart logs, or undefined when there is nothing to say. */
export function brokenSnapshotsWarning(broken: readonly BrokenSnapshot[], usedIndex: number): string | undefined {
  if (broken.length === 0) return undefined;
  const over = passedOver(broken, usedIndex);
  const from = usedIndex > 0 ? `snapshot ${usedIndex}` : "the WAL alone (no usable snapshot)";
  if (over.length === 0) return `damaged snapshot files kept as .snap.broken; restarting from ${from}`;
  return `${over.length} intact kvctl snapshot file(s) were renamed .snap.broken by a program that cannot read them (etcdctl backup does this to a kvctl data dir); restarting from ${from}; to use them, rename them back without ".broken"`;
}

/** A WAL that cannot be replayed without the snapshots passed over: the error says why and what to do. */
export function walWithoutSnapshotError(err: unknown, snapDir: string, over: readonly BrokenSnapshot[]): Error {
  const why = err instanceof Error ? err.message : String(err);
  return new Error(`${why}; the WAL needs the snapshot ${over.map((b) => join(snapDir, b.name)).join(", ")} renamed .snap.broken by a program that cannot read kvctl snapshots (etcdctl backup?): rename it back without ".broken" and start again`);
}
