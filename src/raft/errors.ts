// Errors of the Raft core. Each has a stable `code` (the server maps codes, never
// messages). Storage errors are expected conditions the core recovers from (it catches
// them by class); RaftInvariantError means the log or state is corrupt: like etcd's
// panics, the process must stop rather than carry on (CONVENTIONS habit 4).

export class RaftError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A proposal was not appended: no leader known, leadership transfer, or removed leader. */
export class ProposalDroppedError extends RaftError {
  constructor(detail = "raft proposal dropped") {
    super("ERR_PROPOSAL_DROPPED", detail);
  }
}

/** The requested index predates the last snapshot (etcd's ErrCompacted). */
export class CompactedError extends RaftError {
  constructor() {
    super("ERR_COMPACTED", "Requested index is unavailable due to compaction");
  }
}

/** The requested entries are not in storage (etcd's ErrUnavailable). */
export class UnavailableError extends RaftError {
  constructor() {
    super("ERR_UNAVAILABLE", "Requested entry at index is unavailable");
  }
}

/** A snapshot older than the current one was offered (etcd's ErrSnapOutOfDate). */
export class SnapOutOfDateError extends RaftError {
  constructor() {
    super("ERR_SNAP_OUT_OF_DATE", "Requested index is older than the existing snapshot");
  }
}

/** Storage is still preparing the snapshot; the leader retries later. */
export class SnapshotTemporarilyUnavailableError extends RaftError {
  constructor() {
    super("ERR_SNAPSHOT_TEMPORARILY_UNAVAILABLE", "Snapshot is temporarily unavailable");
  }
}

/** A broken invariant (etcd panics here). Never catch this to continue. */
export class RaftInvariantError extends RaftError {
  constructor(message: string) {
    super("ERR_RAFT_INVARIANT", message);
  }
}

/** Throws RaftInvariantError; used where etcd calls logger.Panicf. */
export function invariant(cond: boolean, message: () => string): asserts cond {
  if (!cond) throw new RaftInvariantError(message());
}
