// Automatic compaction of the v3 key space, as etcd 3.4's v3compactor decides it. Pure:
// the server calls step() on a timer with the clock and the current revision, and
// proposes a compaction to the revision it answers (only while this member leads).
//
// periodic (--auto-compaction-retention a duration): every interval (the retention, at
//   most an hour) compact to the revision seen one retention ago; revisions are sampled
//   every interval/10, the first compaction waits a whole retention.
// revision (--auto-compaction-retention a count): every 5 minutes compact to the current
//   revision minus the count, unless that is not above the last one.

export interface Compactor {
  /** How often step() wants to be called, ms. */
  readonly stepMs: number;
  /** The revision to compact to now, if any. */
  step(now: number, revision: number): number | undefined;
  /** The outcome of the compaction step() asked for ("compacted" counts as done, as in etcd). */
  done(now: number, ok: boolean): void;
}

const HOUR_MS = 60 * 60 * 1000;
/** etcd's revision compactor interval. */
export const REVISION_COMPACT_INTERVAL_MS = 5 * 60 * 1000;

export function createCompactor(c: { mode: "periodic" | "revision"; retention: number }, start: number): Compactor | undefined {
  if (c.retention <= 0) return undefined;
  return c.mode === "periodic" ? periodic(c.retention, start) : byRevision(c.retention);
}

function periodic(periodMs: number, start: number): Compactor {
  const compactInterval = Math.min(periodMs, HOUR_MS);
  const retryInterval = Math.max(1, Math.floor(compactInterval / 10));
  const retentions = Math.floor(periodMs / retryInterval) + 1;
  /** revs[0] is the revision seen one period ago (once enough samples were taken). */
  const revs: number[] = [];
  let lastSuccess = start;
  let baseInterval = periodMs;
  return {
    stepMs: retryInterval,
    step(now, revision) {
      revs.push(revision);
      if (revs.length > retentions) revs.shift();
      if (now - lastSuccess < baseInterval) return undefined;
      // The first compaction waits a whole period; later ones come every compactInterval.
      baseInterval = compactInterval;
      return revs[0];
    },
    done(now, ok) {
      if (ok) lastSuccess = now;
    },
  };
}

function byRevision(retention: number): Compactor {
  let last = 0;
  let asked = 0;
  return {
    stepMs: REVISION_COMPACT_INTERVAL_MS,
    step(_now, revision) {
      const rev = revision - retention;
      if (rev <= 0 || rev === last) return undefined;
      asked = rev;
      return rev;
    },
    done(_now, ok) {
      if (ok) last = asked;
    },
  };
}
