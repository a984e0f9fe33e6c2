// The leader's lease endpoints on the peer port answer as etcd's leasehttp does: the lease
// keeper's refusals and "not found" become etcd's statuses and texts, a body that does not
// decode is a 400, and a path it does not serve is the 400 an older kvctl's follower reads
// as "no batch path here".
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import {
  APPLY_TIMEOUT_TEXT,
  LEASE_NOT_FOUND_TEXT,
  NOT_PRIMARY_TEXT,
  PEER_LEASE_BATCH_PATH,
  PEER_LEASE_INTERNAL_PATH,
  PEER_LEASE_PATH,
  UNKNOWN_PATH_TEXT,
  decodeRenewResponse,
  decodeTimeToLiveResponse,
  decodeTtls,
  encodeLeaseIds,
  encodeRenewRequest,
  encodeTimeToLiveRequest,
} from "../lease-peer-wire.ts";
import { handlePeerLeases, type PeerLeaseHost } from "./peer-leases.ts";

let state: "primary" | "notPrimary" | "catchingUp" = "primary";
const ttls = new Map<bigint, number>([[7n, 10]]);
const host: PeerLeaseHost = {
  renewForPeer: async (ids) => (state === "primary" ? { value: ids.map((id) => ttls.get(id)) } : { refused: state }),
  timeToLiveForPeer: async (id) => {
    if (state !== "primary") return { refused: state };
    const ttl = ttls.get(id);
    return { value: ttl === undefined ? undefined : { revision: 3, id, ttl: ttl - 1, grantedTtl: ttl, keys: [Buffer.from("k")] } };
  },
};
const server = createServer((req, res) => handlePeerLeases(req, res, host));
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
after(() => server.close());
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

async function post(path: string, body: Uint8Array, method = "POST"): Promise<{ status: number; body: Buffer }> {
  const res = await fetch(url + path, { method, ...(method === "POST" ? { body } : {}) });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
}

test("a keepalive, a TTL question and a batch, answered by the primary lessor", async () => {
  state = "primary";
  const one = await post(PEER_LEASE_PATH, encodeRenewRequest(7n));
  assert.equal(one.status, 200);
  assert.deepEqual(decodeRenewResponse(one.body), { id: 7n, ttl: 10 });
  const t = await post(PEER_LEASE_INTERNAL_PATH, encodeTimeToLiveRequest(7n, true));
  assert.equal(t.status, 200);
  assert.deepEqual(decodeTimeToLiveResponse(t.body), { revision: 0, id: 7n, ttl: 9, grantedTtl: 10, keys: [Buffer.from("k")] });
  const batch = await post(PEER_LEASE_BATCH_PATH, encodeLeaseIds([7n, 8n, 7n]));
  assert.equal(batch.status, 200);
  assert.deepEqual(decodeTtls(batch.body), [10, -1, 10]);
});

test("a lease that does not exist is 404 on /leases and /leases/internal", async () => {
  state = "primary";
  for (const [path, body] of [[PEER_LEASE_PATH, encodeRenewRequest(8n)], [PEER_LEASE_INTERNAL_PATH, encodeTimeToLiveRequest(8n, false)]] as const) {
    const r = await post(path, body);
    assert.deepEqual([r.status, r.body.toString()], [404, LEASE_NOT_FOUND_TEXT + "\n"], path);
  }
});

test("refusals: 400 from a member that does not lead, 408 from a leader not yet the primary lessor", async () => {
  for (const [s, status, text] of [["notPrimary", 400, NOT_PRIMARY_TEXT], ["catchingUp", 408, APPLY_TIMEOUT_TEXT]] as const) {
    state = s;
    for (const [path, body] of [[PEER_LEASE_PATH, encodeRenewRequest(7n)], [PEER_LEASE_INTERNAL_PATH, encodeTimeToLiveRequest(7n, false)], [PEER_LEASE_BATCH_PATH, encodeLeaseIds([7n])]] as const) {
      const r = await post(path, body);
      assert.deepEqual([r.status, r.body.toString()], [status, text + "\n"], `${s} ${path}`);
    }
  }
});

test("a body that does not decode is 400; an unknown path is 400 with etcd's text; GET is 405", async () => {
  state = "primary";
  const bad = await post(PEER_LEASE_INTERNAL_PATH, Buffer.from([0x0a, 0x7f]));
  assert.deepEqual([bad.status, bad.body.toString()], [400, "error unmarshalling request\n"]);
  const unknown = await post("/leases/other", Buffer.alloc(0));
  assert.equal(unknown.status, 400);
  assert.ok(unknown.body.toString().startsWith(UNKNOWN_PATH_TEXT), unknown.body.toString());
  assert.equal((await post(PEER_LEASE_PATH, Buffer.alloc(0), "GET")).status, 405);
});
