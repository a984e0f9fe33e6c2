// Keepalives a follower forwards to the leader's peer port: sent together on /leases/batch
// (each answered with its own TTL, or as a lease not found), and one by one on etcd's
// /leases when the leader does not know the batch path (an older kvctl).
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";
import type { LeaseId, V3KeySpace } from "../store/v3/index.ts";
import { V3Errors } from "../api/v3-errors.ts";
import { peerPost } from "../transport/http-client.ts";
import { LeaseKeeper, type LeaseKeeperHost } from "./lease-keeper.ts";
import { PEER_LEASE_BATCH_PATH, PEER_LEASE_PATH } from "./lease-peer-wire.ts";
import { handlePeerLeases } from "./http/peer-leases.ts";
import { silentLogger } from "./logger.ts";
import type { Membership } from "./membership.ts";

const LEADER_ID = 1;
const config = { electionTimeout: 500, leaseCheckpoint: { enabled: false, intervalMs: 300_000 } };
const agent = new http.Agent({ keepAlive: true });
const servers: http.Server[] = [];
after(() => {
  for (const s of servers) s.close();
  agent.destroy();
});

/** A promoted leader holding `leases` (id → TTL s), served on a peer port; `paths` lists the requests it got. */
async function leader(leases: Record<string, number>, opts: { batchPath: boolean }): Promise<{ url: string; paths: string[] }> {
  const host = {
    memberId: LEADER_ID,
    leaderId: LEADER_ID,
    isLeader: true,
    requestTimeoutMs: 5000,
    config,
    v3: { leases: () => [] } as unknown as V3KeySpace,
  } as unknown as LeaseKeeperHost;
  const keeper = new LeaseKeeper(host, silentLogger);
  keeper.promote();
  for (const [id, ttl] of Object.entries(leases)) keeper.applied({ k: "leaseGrant", id: BigInt(id), ttl }, { ok: true, v3: { revision: 1, id: BigInt(id), ttl } });
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? "");
    if (!opts.batchPath && req.url === PEER_LEASE_BATCH_PATH) {
      // What a leader without the batch path answers (its /leases handler).
      req.resume();
      res.writeHead(400, { "Content-Type": "text/plain; charset=utf-8" });
      res.end(`unknown request path ${JSON.stringify(req.url)}\n`);
      return;
    }
    handlePeerLeases(req, res, keeper);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
}

function follower(leaderUrl: string): LeaseKeeper {
  const host = {
    memberId: 2,
    leaderId: LEADER_ID,
    isLeader: false,
    requestTimeoutMs: 5000,
    config,
    membership: { get: (id: number) => (id === LEADER_ID ? { id, peerUrls: [leaderUrl] } : undefined) } as unknown as Membership,
    transport: { request: (url: string, body: Uint8Array, timeoutMs: number) => peerPost(new URL(url), body, { agent, timeoutMs }) },
  } as unknown as LeaseKeeperHost;
  return new LeaseKeeper(host, silentLogger);
}

const renewAll = (k: LeaseKeeper, ids: LeaseId[]): Promise<(number | undefined)[]> => Promise.all(ids.map((id) => k.renew(id)));

test("keepalives forwarded at once go to the leader as one batch, each answered with its lease's TTL", async () => {
  const l = await leader({ "7": 10, "9223372036854775807": 30 }, { batchPath: true });
  const f = follower(l.url);
  const ids = [7n, 9223372036854775807n, 8n, ...Array.from({ length: 40 }, () => 7n)];
  assert.deepEqual(await renewAll(f, ids), [10, 30, undefined, ...Array.from({ length: 40 }, () => 10)]);
  assert.deepEqual(l.paths, [PEER_LEASE_BATCH_PATH]);
});

test("keepalives that arrive while batches are unanswered wait and go together", async () => {
  const l = await leader({ "7": 10 }, { batchPath: true });
  const f = follower(l.url);
  const answers: Promise<number | undefined>[] = [];
  for (let turn = 0; turn < 20; turn++) {
    for (let i = 0; i < 10; i++) answers.push(f.renew(7n));
    await new Promise((r) => setImmediate(r));
  }
  assert.ok((await Promise.all(answers)).every((ttl) => ttl === 10));
  assert.ok(l.paths.length < 20, `${l.paths.length} requests for 200 keepalives in 20 turns`);
});

test("a leader without the batch path gets the keepalives one by one on /leases", async () => {
  const l = await leader({ "7": 10 }, { batchPath: false });
  const f = follower(l.url);
  assert.deepEqual(await renewAll(f, [7n, 8n, 7n]), [10, undefined, 10]);
  assert.deepEqual(await f.renew(7n), 10);
  assert.equal(l.paths.filter((p) => p === PEER_LEASE_BATCH_PATH).length, 1);
  assert.equal(l.paths.filter((p) => p === PEER_LEASE_PATH).length, 4);
});

test("the peer lease endpoints read a capped body: a larger one is answered 413, read to its end", async () => {
  const l = await leader({ "7": 10 }, { batchPath: true });
  const res = await fetch(l.url + PEER_LEASE_PATH, { method: "POST", body: Buffer.alloc(2 << 20) });
  assert.equal(res.status, 413);
  assert.match(await res.text(), /^request body larger than \d+ bytes\n$/);
});

// etcd's authApplierV3.LeaseRevoke refuses a caller who may not write every key of the
// lease: the lease lives on, and expires at its deadline. A keeper that dropped the
// deadline on any applied revocation left such a lease alive for ever.
test("a revocation apply refused for the caller's permissions keeps the lease's deadline; an applied one, or one of a lease gone, ends it", async () => {
  const host = { memberId: LEADER_ID, leaderId: LEADER_ID, isLeader: true, requestTimeoutMs: 5000, config, v3: { leases: () => [] } as unknown as V3KeySpace } as unknown as LeaseKeeperHost;
  const keeper = new LeaseKeeper(host, silentLogger);
  keeper.promote();
  for (const id of [7n, 8n, 9n]) keeper.applied({ k: "leaseGrant", id, ttl: 10 }, { ok: true, v3: { revision: 1, id, ttl: 10 } });
  keeper.applied({ k: "leaseRevoke", id: 7n, a: { user: "u1", revision: 3 } }, { ok: false, error: V3Errors.permissionDenied() });
  keeper.applied({ k: "leaseRevoke", id: 7n, a: null }, { ok: false, error: V3Errors.userEmpty() });
  keeper.applied({ k: "leaseRevoke", id: 7n, a: { user: "u1", revision: 2 } }, { ok: false, error: V3Errors.authOldRevision() });
  keeper.applied({ k: "leaseRevoke", id: 8n, a: null }, { ok: true, v3: { revision: 2 } });
  keeper.applied({ k: "leaseRevoke", id: 9n }, { ok: false, error: V3Errors.leaseNotFound() });
  assert.deepEqual(await renewAll(keeper, [7n, 8n, 9n]), [10, undefined, undefined]);
});
