// --force-new-cluster (etcd's restartAsStandaloneNode): a member whose cluster lost its
// quorum for good restarts as a one-member cluster with all its data. Its log is cut at the
// commit index (what follows was never acknowledged by a quorum, and nobody will ever vote
// on it now), then conf changes removing every other member are appended and committed by
// fiat: there is no quorum to ask. They are ordinary log entries, so a later restart without
// the flag, and a member added afterwards, replay the same removals (etcd: createConfigChangeEnts).
import { ConfChangeType, EntryType, decodeConfChange, encodeConfChange, type ConfState, type Entry, type HardState } from "../raft/index.ts";
import type { Member } from "./membership.ts";

export interface StandaloneLog {
  /** The log to start Raft with: the committed entries, then `appended`. */
  entries: Entry[];
  /** The conf-change entries to write to the WAL (right after the commit index). */
  appended: Entry[];
  /** The hard state to save with them: committed up to the last appended entry. */
  hardState: HardState;
  /** How many uncommitted entries were dropped. */
  discarded: number;
  /** The members removed (ids). */
  removed: number[];
}

/**
 * The members Raft knows at the end of the log: the snapshot's configuration, then every
 * conf change after it (etcd: getIDs). Learners are members too: they are removed as well.
 */
export function memberIdsInLog(confState: ConfState, entries: readonly Entry[]): Set<number> {
  const ids = new Set<number>([...confState.voters, ...confState.learners]);
  for (const e of entries) {
    if (e.type !== EntryType.ConfChange) continue;
    const cc = decodeConfChange(e.data);
    if (cc.type === ConfChangeType.AddNode || cc.type === ConfChangeType.AddLearnerNode) ids.add(cc.nodeId);
    else if (cc.type === ConfChangeType.RemoveNode) ids.delete(cc.nodeId);
  }
  return ids;
}

/**
 * The log of a member restarted alone. `self` is added first when it is not a voter (etcd
 * adds it too): Raft refuses a configuration with no voter, so the removals come after.
 */
export function standaloneLog(opts: { entries: readonly Entry[]; hardState: HardState; confState: ConfState; selfId: number; self: Member; knownIds: Iterable<number> }): StandaloneLog {
  const { hardState, selfId } = opts;
  const kept = opts.entries.filter((e) => e.index <= hardState.commit);
  const ids = memberIdsInLog(opts.confState, kept);
  for (const id of opts.knownIds) ids.add(id);
  const voters = new Set(opts.confState.voters);
  for (const e of kept) {
    if (e.type !== EntryType.ConfChange) continue;
    const cc = decodeConfChange(e.data);
    if (cc.type === ConfChangeType.AddNode) voters.add(cc.nodeId);
    else if (cc.type === ConfChangeType.RemoveNode || cc.type === ConfChangeType.AddLearnerNode) voters.delete(cc.nodeId);
  }
  const appended: Entry[] = [];
  let next = hardState.commit + 1;
  const add = (type: ConfChangeType, nodeId: number, context: Uint8Array): void => {
    appended.push({ term: hardState.term, index: next++, type: EntryType.ConfChange, data: encodeConfChange({ type, nodeId, context }) });
  };
  if (!voters.has(selfId)) {
    // Applied as any AddNode: the context carries the member for the membership list.
    add(ConfChangeType.AddNode, selfId, Buffer.from(JSON.stringify({ proposer: 0, reqId: 0, member: { ...opts.self, isLearner: undefined } })));
  }
  const removed = [...ids].filter((id) => id !== selfId).sort((a, b) => a - b);
  for (const id of removed) add(ConfChangeType.RemoveNode, id, new Uint8Array(0));
  const last = appended.at(-1)?.index ?? kept.at(-1)?.index ?? hardState.commit;
  return {
    entries: [...kept, ...appended],
    appended,
    hardState: { ...hardState, commit: Math.max(hardState.commit, last) },
    discarded: opts.entries.length - kept.length,
    removed,
  };
}
