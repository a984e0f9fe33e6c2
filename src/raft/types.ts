// Wire and state types of the Raft core, mirroring etcd's raftpb (raft.proto) and the
// Ready / SoftState / ReadState structs of etcd-io/raft (node.go, read_only.go).
//
// Numbers: IDs are positive safe integers, 0 means "none". Terms and indexes are safe
// integers (a cluster would need 2^53 entries to overflow). Entry data is opaque bytes.
// Every object handed out by the core is treated as immutable by both sides: the core
// never mutates an Entry, Message or Snapshot after it has been created.

/** Node id placeholder meaning "no node" (no leader, no vote). */
export const None = 0;

/** Entry types; the numbers are raftpb.EntryType's so a WAL can store them as is. */
export const EntryType = { Normal: 0, ConfChange: 1 } as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];

export interface Entry {
  term: number;
  index: number;
  type: EntryType;
  data: Uint8Array;
}

/** What must be on disk before any message of the same Ready leaves the node. */
export interface HardState {
  term: number;
  vote: number;
  commit: number;
}

/** The membership as voters and learners. Invariant: the two lists do not intersect. */
export interface ConfState {
  voters: number[];
  learners: number[];
}

export interface SnapshotMetadata {
  index: number;
  term: number;
  confState: ConfState;
}

/** A snapshot; `metadata.index === 0` means "no snapshot" (etcd's IsEmptySnap). */
export interface Snapshot {
  data: Uint8Array;
  metadata: SnapshotMetadata;
}

/**
 * Message types with raftpb.MessageType's numbers (transport may send them as is).
 * Local types (Hup, Beat, Unreachable, SnapStatus, CheckQuorum) never cross the network.
 */
export const MessageType = {
  MsgHup: 0,
  MsgBeat: 1,
  MsgProp: 2,
  MsgApp: 3,
  MsgAppResp: 4,
  MsgVote: 5,
  MsgVoteResp: 6,
  MsgSnap: 7,
  MsgHeartbeat: 8,
  MsgHeartbeatResp: 9,
  MsgUnreachable: 10,
  MsgSnapStatus: 11,
  MsgCheckQuorum: 12,
  MsgTransferLeader: 13,
  MsgTimeoutNow: 14,
  MsgReadIndex: 15,
  MsgReadIndexResp: 16,
  MsgPreVote: 17,
  MsgPreVoteResp: 18,
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

const messageTypeNames: readonly string[] = Object.keys(MessageType);

/** "MsgApp" for 3, as etcd's MessageType.String(). */
export function messageTypeName(t: MessageType): string {
  return messageTypeNames[t] ?? `MsgUnknown(${t})`;
}

/**
 * One Raft RPC. All fields are always present (defaults 0 / false / empty) except
 * `snapshot`, which only MsgSnap carries; use `message()` to build one so that whole
 * message lists compare with deepStrictEqual.
 */
export interface Message {
  type: MessageType;
  to: number;
  from: number;
  term: number;
  /** Term of the entry at `index` (MsgApp), or of the candidate's last entry (votes). */
  logTerm: number;
  index: number;
  entries: Entry[];
  commit: number;
  snapshot?: Snapshot;
  reject: boolean;
  /** On a rejected MsgAppResp: the follower's last index, to skip probing one by one. */
  rejectHint: number;
  /** Heartbeat / ReadIndex context, or "CampaignTransfer" on a forced vote. */
  context: Uint8Array;
}

const emptyBytes = new Uint8Array(0);

/** Builds a Message with every unspecified field at its zero value. */
export function message(fields: Partial<Message> & { type: MessageType }): Message {
  const m: Message = {
    type: fields.type,
    to: fields.to ?? 0,
    from: fields.from ?? 0,
    term: fields.term ?? 0,
    logTerm: fields.logTerm ?? 0,
    index: fields.index ?? 0,
    entries: fields.entries ?? [],
    commit: fields.commit ?? 0,
    reject: fields.reject ?? false,
    rejectHint: fields.rejectHint ?? 0,
    context: fields.context ?? emptyBytes,
  };
  if (fields.snapshot !== undefined) m.snapshot = fields.snapshot;
  return m;
}

/** Role names exactly as etcd prints StateType (also used in SoftState). */
export const StateType = {
  Follower: "StateFollower",
  Candidate: "StateCandidate",
  Leader: "StateLeader",
  PreCandidate: "StatePreCandidate",
} as const;
export type StateType = (typeof StateType)[keyof typeof StateType];

/** Volatile state, useful to the server (who leads?) but never persisted. */
export interface SoftState {
  lead: number;
  raftState: StateType;
}

/**
 * Answer to a ReadIndex request: once the local applied index reaches `index`, reads
 * issued before the request may be served locally. `requestCtx` is the caller's ctx.
 */
export interface ReadState {
  index: number;
  requestCtx: Uint8Array;
}

/**
 * A batch of work for the server loop (see README.md for the required order):
 * persist hardState + entries + snapshot, then send messages, then apply
 * committedEntries, then call advance(rd).
 */
export interface Ready {
  /** Present only when it changed since the last Ready. */
  softState?: SoftState;
  /** Present only when it changed since the last Ready; persist BEFORE sending. */
  hardState?: HardState;
  readStates: ReadState[];
  /** Entries to append to stable storage BEFORE the messages are sent. */
  entries: Entry[];
  /** Snapshot to persist and apply (present only when the leader sent one). */
  snapshot?: Snapshot;
  /** Entries to apply, in order. May overlap `entries` (single voter): persist first. */
  committedEntries: Entry[];
  /** Messages to send AFTER entries and hardState are durable. */
  messages: Message[];
  /** True when hardState.term/vote or entries changed: the write needs an fsync. */
  mustSync: boolean;
}

/** raftpb.ConfChangeType numbers. */
export const ConfChangeType = { AddNode: 0, RemoveNode: 1, UpdateNode: 2, AddLearnerNode: 3 } as const;
export type ConfChangeType = (typeof ConfChangeType)[keyof typeof ConfChangeType];

/** A single-step membership change (etcd's ConfChange, V1). */
export interface ConfChange {
  type: ConfChangeType;
  nodeId: number;
  context: Uint8Array;
  /** etcd threads a request id through here; 0 when unused. */
  id?: number;
}

/** Injected logger; the core never writes to stdout. */
export interface RaftLogger {
  debug(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export const discardLogger: RaftLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
};

export function isEmptyHardState(hs: HardState): boolean {
  return hs.term === 0 && hs.vote === 0 && hs.commit === 0;
}

export function isHardStateEqual(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}

export function isEmptySnap(s: Snapshot): boolean {
  return s.metadata.index === 0;
}

export function emptySnapshot(): Snapshot {
  return { data: new Uint8Array(0), metadata: { index: 0, term: 0, confState: { voters: [], learners: [] } } };
}

/** MsgHup, MsgBeat, ... are generated inside a node and must never come from a peer. */
export function isLocalMsg(t: MessageType): boolean {
  return (
    t === MessageType.MsgHup ||
    t === MessageType.MsgBeat ||
    t === MessageType.MsgUnreachable ||
    t === MessageType.MsgSnapStatus ||
    t === MessageType.MsgCheckQuorum
  );
}

export function isResponseMsg(t: MessageType): boolean {
  return (
    t === MessageType.MsgAppResp ||
    t === MessageType.MsgVoteResp ||
    t === MessageType.MsgHeartbeatResp ||
    t === MessageType.MsgUnreachable ||
    t === MessageType.MsgPreVoteResp
  );
}

export function voteRespMsgType(t: MessageType): MessageType {
  if (t === MessageType.MsgVote) return MessageType.MsgVoteResp;
  if (t === MessageType.MsgPreVote) return MessageType.MsgPreVoteResp;
  throw new Error(`Cannot map vote response: ${messageTypeName(t)} is not a vote message`);
}
