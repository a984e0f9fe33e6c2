// The Raft state machine, part 5: ReadIndex on the leader (thesis §6.4, etcd's
// sendMsgReadIndexResponse & co). See read-only.ts for the bookkeeping.

import { VoteResult, voteResult } from "./quorum/majority.ts";
import type { Raft } from "./raft.ts";
import { type Message, MessageType as MT, None, message } from "./types.ts";

/**
 * The answer to a read request at `readIndex`: a local request becomes a ReadState
 * (returns undefined); a follower's forwarded request becomes an MsgReadIndexResp.
 */
export function responseToReadIndexReq(r: Raft, req: Message, readIndex: number): Message | undefined {
  if (req.from === None || req.from === r.id) {
    r.readStates.push({ index: readIndex, requestCtx: req.entries[0]!.data });
    return undefined;
  }
  return message({ type: MT.MsgReadIndexResp, to: req.from, index: readIndex, entries: req.entries });
}

/** Records the request at our commit index and confirms leadership with a heartbeat round. */
export function sendReadIndexResponse(r: Raft, m: Message): void {
  const ctx = m.entries[0]!.data;
  r.readOnly.addRequest(r.raftLog.committed, m);
  // Our own ack counts toward the quorum.
  r.readOnly.recvAck(r.id, ctx);
  r.bcastHeartbeatWithCtx(ctx);
}

/** Serves reads parked before this leader committed an entry of its term. */
export function releasePendingReadIndexMessages(r: Raft): void {
  if (!r.committedEntryInCurrentTerm()) {
    r.logger.error("pending MsgReadIndex should be released only after first commit in current term");
    return;
  }
  const msgs = r.pendingReadIndexMessages;
  r.pendingReadIndexMessages = [];
  for (const m of msgs) sendReadIndexResponse(r, m);
}

/** A heartbeat response echoing a read ctx: answer every read it confirms. */
export function onHeartbeatAckForReads(r: Raft, m: Message): void {
  if (m.context.length === 0) return;
  const acks = r.readOnly.recvAck(m.from, m.context);
  if (acks === undefined || voteResult(r.prs.voters, acks) !== VoteResult.Won) return;
  for (const rs of r.readOnly.advance(m)) {
    const resp = responseToReadIndexReq(r, rs.req, rs.index);
    if (resp !== undefined) r.send(resp);
  }
}
