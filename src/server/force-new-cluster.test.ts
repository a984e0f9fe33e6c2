import { test } from "node:test";
import assert from "node:assert/strict";
import { ConfChangeType, EntryType, decodeConfChange, encodeConfChange, type Entry } from "../raft/index.ts";
import { memberIdsInLog, standaloneLog } from "./force-new-cluster.ts";

const conf = (index: number, type: ConfChangeType, nodeId: number): Entry => ({ term: 1, index, type: EntryType.ConfChange, data: encodeConfChange({ type, nodeId, context: new Uint8Array(0) }) });
const normal = (index: number, term = 2): Entry => ({ term, index, type: EntryType.Normal, data: Buffer.from(`e${index}`) });
const self = { id: 10, name: "a", peerUrls: ["http://127.0.0.1:47001"], clientUrls: [] };

test("memberIdsInLog: the snapshot's voters and learners, then the log's conf changes", () => {
  const ids = memberIdsInLog({ voters: [10, 20], learners: [30] }, [conf(5, ConfChangeType.AddNode, 40), conf(6, ConfChangeType.RemoveNode, 20), conf(7, ConfChangeType.AddLearnerNode, 50)]);
  assert.deepEqual([...ids].sort((a, b) => a - b), [10, 30, 40, 50]);
});

test("standaloneLog drops the uncommitted tail, removes every other member after the commit index and commits the removals", () => {
  const entries = [conf(1, ConfChangeType.AddNode, 10), conf(2, ConfChangeType.AddNode, 20), conf(3, ConfChangeType.AddNode, 30), normal(4), normal(5), normal(6), normal(7)];
  const s = standaloneLog({ entries, hardState: { term: 3, vote: 20, commit: 5 }, confState: { voters: [], learners: [] }, selfId: 10, self, knownIds: [10, 20, 30] });
  assert.equal(s.discarded, 2);
  assert.deepEqual(s.removed, [20, 30]);
  assert.deepEqual(s.appended.map((e) => [e.index, e.term, e.type]), [[6, 3, EntryType.ConfChange], [7, 3, EntryType.ConfChange]]);
  assert.deepEqual(s.appended.map((e) => decodeConfChange(e.data)).map((cc) => [cc.type, cc.nodeId]), [[ConfChangeType.RemoveNode, 20], [ConfChangeType.RemoveNode, 30]]);
  assert.deepEqual(s.entries.map((e) => e.index), [1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(s.hardState, { term: 3, vote: 20, commit: 7 });
});

test("standaloneLog from a snapshot's configuration; a member removed already is not removed again", () => {
  const entries = [normal(101), conf(102, ConfChangeType.RemoveNode, 30)];
  const s = standaloneLog({ entries, hardState: { term: 4, vote: 10, commit: 102 }, confState: { voters: [10, 20, 30], learners: [] }, selfId: 10, self, knownIds: [10, 20] });
  assert.deepEqual(s.removed, [20]);
  assert.deepEqual(s.appended.map((e) => e.index), [103]);
  assert.equal(s.hardState.commit, 103);
});

test("standaloneLog adds the member itself first when it is no voter (Raft needs one), with its member record", () => {
  const s = standaloneLog({ entries: [], hardState: { term: 2, vote: 0, commit: 50 }, confState: { voters: [20], learners: [10] }, selfId: 10, self, knownIds: [] });
  const ccs = s.appended.map((e) => decodeConfChange(e.data));
  assert.deepEqual(ccs.map((cc) => [cc.type, cc.nodeId]), [[ConfChangeType.AddNode, 10], [ConfChangeType.RemoveNode, 20]]);
  const ctx = JSON.parse(Buffer.from((ccs[0] as { context: Uint8Array }).context).toString("utf8")) as { member: { id: number; peerUrls: string[]; isLearner?: boolean } };
  assert.equal(ctx.member.id, 10);
  assert.deepEqual(ctx.member.peerUrls, self.peerUrls);
  assert.equal(ctx.member.isLearner, undefined);
});

test("standaloneLog of a member alone already appends nothing", () => {
  const s = standaloneLog({ entries: [conf(1, ConfChangeType.AddNode, 10), normal(2)], hardState: { term: 2, vote: 10, commit: 2 }, confState: { voters: [], learners: [] }, selfId: 10, self, knownIds: [10] });
  assert.deepEqual(s.appended, []);
  assert.equal(s.hardState.commit, 2);
});
