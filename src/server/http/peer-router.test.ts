// The peer port's own answers: the state hash, and 503 instead of a crash while it cannot
// be computed (the database closed while a leader's snapshot is installed).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { createPeerRouter, PEER_HASH_PATH, type PeerRouterHost } from "./peer-router.ts";

async function hashAnswer(stateHash: PeerRouterHost["stateHash"]): Promise<{ status: number; body: string }> {
  const host: PeerRouterHost = {
    transport: { handler: () => () => undefined },
    leases: { renewForPeer: async () => ({ refused: "notPrimary" }), timeToLiveForPeer: async () => ({ refused: "notPrimary" }) },
    membership: { toJSON: () => ({ clusterId: 1, members: [] }) },
    clusterId: 1,
    stateHash,
  };
  const server = createServer(createPeerRouter(host));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${PEER_HASH_PATH}`);
    return { status: res.status, body: await res.text() };
  } finally {
    await new Promise((r) => server.close(r));
  }
}

test("GET /hash answers the member's state hash", async () => {
  const a = await hashAnswer(() => ({ appliedIndex: 7, storeIndex: 5, hash: "ab" }));
  assert.deepEqual(a, { status: 200, body: '{"appliedIndex":7,"storeIndex":5,"hash":"ab"}' });
});

test("GET /hash answers 503 when the hash cannot be computed, and the process goes on", async () => {
  const a = await hashAnswer(() => {
    throw new Error("The environment is already closed");
  });
  assert.equal(a.status, 503);
  assert.match(a.body, /state hash unavailable: The environment is already closed/);
});
