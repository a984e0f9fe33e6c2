// Public surface of src/raft (the only file other folders import from).

export {
  CompactedError,
  ProposalDroppedError,
  RaftError,
  RaftInvariantError,
  SnapOutOfDateError,
  SnapshotTemporarilyUnavailableError,
  UnavailableError,
} from "./errors.ts";
export type { Config } from "./config.ts";
export { defaultMaxInflightMsgs, defaultMaxSizePerMsg } from "./config.ts";
export { RawNode, mustSync, type Peer } from "./raw-node.ts";
export type { ProgressStatus, Status } from "./status.ts";
export { MemoryStorage, type InitialState, type Storage } from "./storage.ts";
export { ProgressState } from "./tracker/progress.ts";
export {
  ConfChangeType,
  EntryType,
  MessageType,
  None,
  StateType,
  discardLogger,
  emptySnapshot,
  isEmptyHardState,
  isEmptySnap,
  isLocalMsg,
  isResponseMsg,
  message,
  messageTypeName,
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type RaftLogger,
  type Ready,
  type ReadState,
  type Snapshot,
  type SnapshotMetadata,
  type SoftState,
} from "./types.ts";
export { decodeConfChange, describeEntry, describeMessage, encodeConfChange, entrySize } from "./util.ts";
export { retainEntryData } from "./entry-arena.ts";
