// When a Ready's messages leave, relative to its WAL save: one rule that safety requires,
// and a tuning policy for few cores that must stay inside it. Pure: no I/O, no clock.
//
// Safety (Raft §3.8, §10.2.1 of the thesis; etcd does the same):
// - A follower's or candidate's message that promises its persisted state (a vote, an
//   append or snapshot acknowledgement) leaves only after the save of the Ready that
//   carries it: a member that crashed after sending it must still hold what it promised.
// - A leader may send its appends before its own save completes: its own entries count
//   towards a quorum only once Raft has accounted its append, and what a leader sends as
//   leader promises nothing of its own durability. A vote or acknowledgement it sent as a
//   follower earlier in the same Ready (it won an election while the previous save ran)
//   still waits for the save: etcd sends a leader's whole Ready early; this is stricter.
// - Messages that promise nothing (forwarded proposals and read-index requests, heartbeat
//   answers) may leave before the save on any member.
//
// Tuning (measured on two cores; nothing here changes what is promised):
// - Before a disk write, everything allowed leaves at once (`immediate`), so the peers'
//   fsyncs run alongside ours instead of after it.
// - A follower's acknowledgements after its fsync, and what it forwards, leave at once:
//   the leader waits on them.
// - A leader's commit broadcast with nothing to save leaves after its own clients were
//   answered (`deferred`: node:http would write it before them, and the peers it wakes take
//   the CPU first; traced: 100-160 us of every one-connection write), unless it commits a
//   follower's proposal: then the messages to the proposers go first, at once, since that
//   follower answers its client only once it hears of the commit.
//   When that broadcast is nothing but bare commit updates (appends without entries), it
//   lingers (`lingerMs`, COMMIT_LINGER_MS at most): the next client write's appends, a few
//   hundred microseconds later at one connection, carry it in the same socket write. Each
//   follower then wakes once per write instead of twice (once for the commit, once for the
//   next entry) and answers once, and the leader reads one acknowledgement instead of two.
//   Only a follower's serializable reads and watchers see a commit up to that much later;
//   its linearizable reads learn the commit index from the read-index heartbeats.
// - A follower's answer to a bare commit update (nothing to save) leaves after the entries
//   were applied and its clients answered (`deferred`).
import { MessageType, type Message } from "../raft/index.ts";
import type { SendOptions } from "../transport/index.ts";

/** What the plan needs to know of a Ready and of the member. */
export interface ReadyShape {
  isLeader: boolean;
  memberId: number;
  messages: Message[];
  /** The Ready has entries or a hard state that needs an fdatasync. */
  willSave: boolean;
  /** The proposer (member id) of each committed entry's command; undefined for none. */
  proposers: ReadonlyArray<number | undefined>;
}

export interface SendStep {
  messages: Message[];
  options: SendOptions;
}

/** Messages sent before the save (or, with nothing to save, before apply) and after it. */
export interface SendPlan {
  beforeSave: SendStep | undefined;
  afterSave: SendStep | undefined;
}

/** Messages that make no promise about the sender's persisted state. */
export function promisesNothing(m: Message): boolean {
  return m.type === MessageType.MsgProp || m.type === MessageType.MsgReadIndex || m.type === MessageType.MsgHeartbeatResp;
}

/** Messages that promise the sender's persisted state: a vote, an append acknowledgement. */
export function promisesDurability(m: Message): boolean {
  return m.type === MessageType.MsgVoteResp || m.type === MessageType.MsgAppResp;
}

/** The safety rule: may `m` leave before the save of the Ready that carries it? */
export function mayPrecedeSave(m: Message, isLeader: boolean): boolean {
  return promisesNothing(m) || (isLeader && !promisesDurability(m));
}

/** The messages to the members whose proposals are being committed, first. */
export function proposersFirst(msgs: Message[], proposers: ReadonlyArray<number | undefined>): Message[] {
  const waiting = new Set<number>();
  for (const p of proposers) if (p !== undefined) waiting.add(p);
  const first = msgs.filter((m) => waiting.has(m.to));
  return first.length === 0 || first.length === msgs.length ? msgs : [...first, ...msgs.filter((m) => !waiting.has(m.to))];
}

/** How long (ms) a leader's bare commit update may wait for the next append to take it along. */
export const COMMIT_LINGER_MS = 2;

/** An append that carries no entries: only a commit index (or a probe) for the follower. */
function bareAppend(m: Message): boolean {
  return m.type === MessageType.MsgApp && m.entries.length === 0;
}

/** The tuning policy (see the header); every plan it makes keeps mayPrecedeSave. */
export function planSends(r: ReadyShape): SendPlan {
  if (r.messages.length === 0) return { beforeSave: undefined, afterSave: undefined };
  const afterAnswers: SendOptions = { deferred: r.proposers.length > 0 };
  if (r.isLeader) {
    let early = r.messages;
    let held: SendStep | undefined;
    if (r.messages.some((m) => !mayPrecedeSave(m, true))) {
      early = r.messages.filter((m) => mayPrecedeSave(m, true));
      held = { messages: r.messages.filter((m) => !mayPrecedeSave(m, true)), options: { immediate: true } };
      if (early.length === 0) return { beforeSave: undefined, afterSave: held };
    }
    if (r.willSave) return { beforeSave: { messages: early, options: { immediate: true } }, afterSave: held };
    const followerWaits = r.proposers.some((p) => p !== undefined && p !== r.memberId);
    if (followerWaits) return { beforeSave: { messages: proposersFirst(early, r.proposers), options: { immediate: true } }, afterSave: held };
    const options: SendOptions = afterAnswers.deferred === true && early.every(bareAppend) ? { deferred: true, lingerMs: COMMIT_LINGER_MS } : afterAnswers;
    return { beforeSave: { messages: early, options }, afterSave: held };
  }
  const now = r.messages.filter(promisesNothing);
  const later = now.length === 0 ? r.messages : r.messages.filter((m) => !promisesNothing(m));
  return {
    beforeSave: now.length === 0 ? undefined : { messages: now, options: { immediate: true } },
    afterSave: later.length === 0 ? undefined : { messages: later, options: r.willSave ? { immediate: true } : afterAnswers },
  };
}
