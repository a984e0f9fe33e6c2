// The peer port's own answers: the state hash, and 503 instead of a crash while it cannot
// be computed (the database closed while a leader's snapshot is installed).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { createPeerRouter, PEER_HASH_PATH, type PeerRouterHost } from "./peer-router.ts";
import { MemberError, MemberErrorKind } from "../errors.ts";
import { LearnerNotReadyError } from "../member-promote-wire.ts";

async function hashAnswer(stateHash: PeerRouterHost["stateHash"]): Promise<{ status: number; body: string }> {
  return answer({ stateHash }, PEER_HASH_PATH);
}

async function answer(over: Partial<PeerRouterHost>, path: string, method = "GET"): Promise<{ status: number; body: string; headers: Headers }> {
  const host: PeerRouterHost = {
    transport: { handler: () => () => undefined },
    leases: { renewForPeer: async () => ({ refused: "notPrimary" }), timeToLiveForPeer: async () => ({ refused: "notPrimary" }) },
    membership: { knownJSON: () => ({ clusterId: 1, members: [] }) },
    clusterId: 1,
    members: { promote: async () => [] },
    stateHash: () => ({ appliedIndex: 0, storeIndex: 0, hash: "" }),
    ...over,
  };
  const server = createServer(createPeerRouter(host));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`, { method });
    return { status: res.status, body: await res.text(), headers: res.headers };
  } finally {
    await new Promise((r) => server.close(r));
  }
}

test("GET /hash answers the member's state hash", async () => {
  const a = await hashAnswer(() => ({ appliedIndex: 7, storeIndex: 5, hash: "ab" }));
  assert.deepEqual({ status: a.status, body: a.body }, { status: 200, body: '{"appliedIndex":7,"storeIndex":5,"hash":"ab"}' });
});

test("GET /hash answers 503 when the hash cannot be computed, and the process goes on", async () => {
  const a = await hashAnswer(() => {
    throw new Error("The environment is already closed");
  });
  assert.equal(a.status, 503);
  assert.match(a.body, /state hash unavailable: The environment is already closed/);
});

test("POST /members/promote/<decimal id> answers as etcd's peer handler: the members, or the refusal's status and text", async () => {
  const promoted: number[] = [];
  const members = { promote: async (id: number) => (promoted.push(id), [{ id, name: "c", peerUrls: ["http://127.0.0.1:2580"], clientUrls: ["http://127.0.0.1:2579"] }]) };
  const ok = await answer({ members }, "/members/promote/12", "POST");
  assert.deepEqual([ok.status, ok.body], [200, '[{"id":12,"peerURLs":["http://127.0.0.1:2580"],"name":"c","clientURLs":["http://127.0.0.1:2579"]}]\n']);
  assert.equal(ok.headers.get("x-kv-cluster-id"), "1");
  assert.deepEqual(promoted, [12]);
  const refusing = (err: Error) => ({ members: { promote: async () => Promise.reject(err) } });
  const notReady = await answer(refusing(new LearnerNotReadyError()), "/members/promote/12", "POST");
  assert.deepEqual([notReady.status, notReady.body], [412, "etcdserver: can only promote a learner member which is in sync with leader\n"]);
  const voter = await answer(refusing(new MemberError(MemberErrorKind.notLearner, "etcdserver: can only promote a learner member")), "/members/promote/10", "POST");
  assert.deepEqual([voter.status, voter.body], [412, "membership: can only promote a learner member\n"]);
  const unknown = await answer(refusing(new MemberError(MemberErrorKind.notFound, "No such member: e")), "/members/promote/14", "POST");
  assert.deepEqual([unknown.status, unknown.body], [404, "membership: ID not found\n"]);
  const removed = await answer(refusing(new MemberError(MemberErrorKind.removed, "Member permanently removed: e")), "/members/promote/14", "POST");
  assert.deepEqual([removed.status, removed.body], [500, "membership: ID removed\n"]);
  // The id is parsed first, as Go's ParseUint(s, 10, 64); the method before that.
  const bad = await answer({ members }, "/members/promote/c", "POST");
  assert.deepEqual([bad.status, bad.body], [404, "member c not found in cluster\n"]);
  const get = await answer({ members }, "/members/promote/12");
  assert.deepEqual([get.status, get.headers.get("allow")], [405, "POST"]);
  assert.deepEqual(promoted, [12], "refused requests reach no promotion");
});
