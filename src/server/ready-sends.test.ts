import assert from "node:assert/strict";
import { test } from "node:test";
import { MessageType, message, type Message } from "../raft/index.ts";
import { mulberry32 } from "../prng.test-helper.ts";
import { COMMIT_LINGER_MS, mayPrecedeSave, planSends, promisesDurability, promisesNothing, type ReadyShape, type SendPlan } from "./ready-sends.ts";

const SELF = 1;
const sent = (types: number[], to = 2): Message[] => types.map((type, i) => message({ type: type as MessageType, to: to + (i % 2), from: SELF, index: i }));
const wire = Object.values(MessageType).filter((t) => t !== MessageType.MsgHup && t !== MessageType.MsgBeat && t !== MessageType.MsgCheckQuorum && t !== MessageType.MsgUnreachable && t !== MessageType.MsgSnapStatus);

function all(plan: SendPlan): Message[] {
  return [...(plan.beforeSave?.messages ?? []), ...(plan.afterSave?.messages ?? [])];
}

test("the safety rule: a vote or an acknowledgement never precedes its save, whoever sends it", () => {
  for (const type of wire) {
    const m = message({ type, to: 2, from: SELF });
    if (promisesDurability(m)) {
      assert.equal(mayPrecedeSave(m, false), false, `follower ${type}`);
      assert.equal(mayPrecedeSave(m, true), false, `leader ${type}`);
    }
    if (promisesNothing(m)) assert.equal(mayPrecedeSave(m, false), true);
  }
  // A follower's other messages wait too (the rule is closed: only what promises nothing leaves early).
  assert.equal(mayPrecedeSave(message({ type: MessageType.MsgPreVoteResp, to: 2 }), false), false);
  assert.equal(mayPrecedeSave(message({ type: MessageType.MsgApp, to: 2 }), true), true);
});

test("every plan sends each message exactly once and keeps the safety rule (random Readys, seeded)", () => {
  const seed = Number(process.env["READY_SEED"] ?? 20261126);
  const rnd = mulberry32(seed);
  for (let i = 0; i < 5000; i++) {
    const n = Math.floor(rnd() * 6);
    const messages = Array.from({ length: n }, (_, k) => message({ type: wire[Math.floor(rnd() * wire.length)]!, to: 2 + Math.floor(rnd() * 3), from: SELF, index: k }));
    const proposers = Array.from({ length: Math.floor(rnd() * 4) }, () => (rnd() < 0.3 ? undefined : 1 + Math.floor(rnd() * 4)));
    const r: ReadyShape = { isLeader: rnd() < 0.5, memberId: SELF, messages, willSave: rnd() < 0.5, proposers };
    const plan = planSends(r);
    const out = all(plan);
    assert.equal(out.length, messages.length, `seed ${seed} case ${i}`);
    assert.deepEqual(new Set(out), new Set(messages), `seed ${seed} case ${i}: the same messages`);
    for (const m of plan.beforeSave?.messages ?? []) assert.ok(mayPrecedeSave(m, r.isLeader), `seed ${seed} case ${i}: type ${m.type} before the save`);
    assert.ok(plan.beforeSave === undefined || plan.beforeSave.messages.length > 0);
    assert.ok(plan.afterSave === undefined || plan.afterSave.messages.length > 0);
  }
});

test("leader with entries to save: everything leaves at once, before the fdatasync", () => {
  const messages = sent([MessageType.MsgApp, MessageType.MsgApp, MessageType.MsgHeartbeat]);
  const plan = planSends({ isLeader: true, memberId: SELF, messages, willSave: true, proposers: [] });
  assert.deepEqual(plan, { beforeSave: { messages, options: { immediate: true } }, afterSave: undefined });
});

test("leader committing only its own proposals with nothing to save: the bare commit update lingers for the next append", () => {
  const messages = sent([MessageType.MsgApp, MessageType.MsgApp]);
  const plan = planSends({ isLeader: true, memberId: SELF, messages, willSave: false, proposers: [SELF, undefined] });
  assert.deepEqual(plan, { beforeSave: { messages, options: { deferred: true, lingerMs: COMMIT_LINGER_MS } }, afterSave: undefined });
  // Anything more than bare commit updates (entries for a follower catching up, a heartbeat)
  // waits only for the clients' answers: a follower behind must not wait a linger per round trip.
  const catchUp = message({ type: MessageType.MsgApp, to: 2, from: SELF, entries: [{ term: 1, index: 4, type: 0, data: new Uint8Array() }] as Message["entries"] });
  const mixed = [catchUp, ...sent([MessageType.MsgApp], 3)];
  assert.deepEqual(planSends({ isLeader: true, memberId: SELF, messages: mixed, willSave: false, proposers: [SELF] }).beforeSave?.options, { deferred: true });
  const beat = sent([MessageType.MsgApp, MessageType.MsgHeartbeat]);
  assert.deepEqual(planSends({ isLeader: true, memberId: SELF, messages: beat, willSave: false, proposers: [SELF] }).beforeSave?.options, { deferred: true });
  // Nothing committed: nobody was answered, nothing lingers.
  assert.deepEqual(planSends({ isLeader: true, memberId: SELF, messages, willSave: false, proposers: [] }).beforeSave?.options, { deferred: false });
});

test("leader committing a follower's proposal: the proposer hears first, at once", () => {
  const toOther = message({ type: MessageType.MsgApp, to: 2, from: SELF });
  const toProposer = message({ type: MessageType.MsgApp, to: 3, from: SELF });
  const plan = planSends({ isLeader: true, memberId: SELF, messages: [toOther, toProposer], willSave: false, proposers: [3] });
  assert.deepEqual(plan.beforeSave, { messages: [toProposer, toOther], options: { immediate: true } });
  assert.equal(plan.afterSave, undefined);
});

test("a vote a new leader sent as a follower in the same Ready waits for the save", () => {
  const vote = message({ type: MessageType.MsgVoteResp, to: 2, from: SELF, term: 5 });
  const app = message({ type: MessageType.MsgApp, to: 3, from: SELF, term: 6 });
  const plan = planSends({ isLeader: true, memberId: SELF, messages: [vote, app], willSave: true, proposers: [] });
  assert.deepEqual(plan, { beforeSave: { messages: [app], options: { immediate: true } }, afterSave: { messages: [vote], options: { immediate: true } } });
  const alone = planSends({ isLeader: true, memberId: SELF, messages: [vote], willSave: true, proposers: [] });
  assert.deepEqual(alone, { beforeSave: undefined, afterSave: { messages: [vote], options: { immediate: true } } });
});

test("follower: forwarded proposals leave before the save, acknowledgements after it, at once", () => {
  const prop = message({ type: MessageType.MsgProp, to: 2, from: SELF });
  const ack = message({ type: MessageType.MsgAppResp, to: 2, from: SELF });
  const plan = planSends({ isLeader: false, memberId: SELF, messages: [ack, prop], willSave: true, proposers: [] });
  assert.deepEqual(plan, { beforeSave: { messages: [prop], options: { immediate: true } }, afterSave: { messages: [ack], options: { immediate: true } } });
});

test("follower answering a bare commit update: the answer leaves after its own clients were answered", () => {
  const ack = message({ type: MessageType.MsgAppResp, to: 2, from: SELF });
  const plan = planSends({ isLeader: false, memberId: SELF, messages: [ack], willSave: false, proposers: [SELF] });
  assert.deepEqual(plan, { beforeSave: undefined, afterSave: { messages: [ack], options: { deferred: true } } });
  const idle = planSends({ isLeader: false, memberId: SELF, messages: [ack], willSave: false, proposers: [] });
  assert.deepEqual(idle.afterSave?.options, { deferred: false });
});
