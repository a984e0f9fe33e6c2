// V3KeySpace: leases through the log (grant, attach, overwrite, revoke, renew, expiry,
// time to live), image round trip and hash including leases; alarms of a type etcd does not know.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V3Error, V3Errors } from "../../api/v3-errors.ts";
import { AlarmTable, AlarmType, type AlarmMember, type AlarmSink } from "./alarms.ts";
import { AlarmAction, V3KeySpace } from "./key-space.ts";
import { MAX_LEASE_TTL, MIN_LEASE_TTL } from "./lessor.ts";
import { EventType } from "./types.ts";
import { FROM_KEY, delReq, keysOf, opPut, putReq, rangeReq, txnReq } from "./v3.test-helper.ts";

const T0 = Date.UTC(2026, 0, 1);
const errorIs = (make: () => V3Error) => (err: unknown) =>
  err instanceof V3Error && err.message === make().message && err.code === make().code;
const keysOfLease = (ks: V3KeySpace, id: bigint) => ks.timeToLive(id, T0, { keys: true })?.keys.map((k) => k.toString());

test("lease grant answers the granted TTL, raised to the minimum", () => {
  const ks = new V3KeySpace();
  assert.deepEqual(ks.leaseGrant({ id: 4242n, ttl: 30 }, T0), { revision: 1, id: 4242n, ttl: 30 });
  for (const [id, ttl] of [[1n, 0], [2n, 1], [3n, -5]] as const) {
    assert.equal(ks.leaseGrant({ id, ttl }, T0).ttl, MIN_LEASE_TTL);
  }
  assert.equal(MIN_LEASE_TTL, 2);
});

test("lease grant fails for a duplicate id, a too large TTL and id 0", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 1n, ttl: 10 }, T0);
  assert.throws(() => ks.leaseGrant({ id: 1n, ttl: 10 }, T0), errorIs(V3Errors.leaseExist));
  assert.throws(() => ks.leaseGrant({ id: 2n, ttl: MAX_LEASE_TTL + 1 }, T0), errorIs(V3Errors.leaseTTLTooLarge));
  assert.equal(ks.leaseGrant({ id: 3n, ttl: MAX_LEASE_TTL }, T0).ttl, 9_000_000_000);
  assert.throws(() => ks.leaseGrant({ id: 0n, ttl: 10 }, T0), errorIs(V3Errors.leaseNotFound));
});

test("time to live counts whole seconds left and lists keys on request", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 9n, ttl: 30 }, T0);
  ks.put(putReq("b", "1", { lease: 9n }));
  ks.put(putReq("a", "1", { lease: 9n }));
  assert.deepEqual(ks.timeToLive(9n, T0 + 1), { revision: 3, id: 9n, ttl: 29, grantedTtl: 30, keys: [] });
  assert.equal(ks.timeToLive(9n, T0 + 10_000)?.ttl, 20);
  assert.equal(ks.timeToLive(9n, T0 + 31_000)?.ttl, 0, "never negative while the lease exists");
  assert.deepEqual(keysOfLease(ks, 9n), ["a", "b"]);
  assert.equal(ks.timeToLive(10n, T0), undefined);
});

test("put with an unknown lease fails and writes nothing, also inside a txn", () => {
  const ks = new V3KeySpace();
  assert.throws(() => ks.put(putReq("k", "v", { lease: 123n })), errorIs(V3Errors.leaseNotFound));
  assert.throws(() => ks.txn(txnReq({ success: [opPut("a", "1"), opPut("k", "v", { lease: 123n })] })), errorIs(V3Errors.leaseNotFound));
  assert.equal(ks.revision, 1);
});

test("overwriting a key with another lease or none moves or drops the attachment", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 1n, ttl: 60 }, T0);
  ks.leaseGrant({ id: 2n, ttl: 60 }, T0);
  ks.put(putReq("k", "v", { lease: 1n }));
  ks.put(putReq("k", "v", { lease: 2n }));
  assert.deepEqual(keysOfLease(ks, 1n), []);
  assert.deepEqual(keysOfLease(ks, 2n), ["k"]);
  ks.put(putReq("k", "w", { ignoreLease: true }));
  assert.deepEqual(keysOfLease(ks, 2n), ["k"], "ignore_lease keeps the lease");
  ks.put(putReq("k", "x"));
  assert.deepEqual(keysOfLease(ks, 2n), []);
  ks.put(putReq("j", "x", { lease: 1n }));
  ks.deleteRange(delReq("j"));
  assert.deepEqual(keysOfLease(ks, 1n), [], "a delete detaches");
});

test("lease revoke deletes all its keys in one revision with one event each", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 5n, ttl: 60 }, T0);
  ks.put(putReq("exp/b", "2", { lease: 5n })); // 2
  ks.put(putReq("exp/a", "1", { lease: 5n })); // 3
  ks.put(putReq("other", "x")); // 4
  const r = ks.leaseRevoke(5n);
  assert.deepEqual(r.response, { revision: 5 });
  assert.equal(r.changes?.revision, 5);
  assert.deepEqual(
    r.changes?.events.map((e) => [e.type, e.kv.key.toString(), e.kv.modRevision, e.prevKv?.value.toString()]),
    [
      [EventType.DELETE, "exp/a", 5, "1"],
      [EventType.DELETE, "exp/b", 5, "2"],
    ],
  );
  assert.deepEqual(keysOf(ks.range(rangeReq("\0", { rangeEnd: FROM_KEY })).kvs), ["other"]);
  assert.equal(ks.timeToLive(5n, T0), undefined);
  assert.throws(() => ks.leaseRevoke(5n), errorIs(V3Errors.leaseNotFound));
});

test("revoking a lease without keys takes no revision", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 5n, ttl: 60 }, T0);
  const r = ks.leaseRevoke(5n);
  assert.deepEqual(r, { response: { revision: 1 } });
  assert.deepEqual(ks.leases(), []);
});

test("renew moves the expiry and answers the granted TTL; unknown or due leases are not found", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 1n, ttl: 10 }, T0);
  assert.equal(ks.leaseRenew(1n, T0 + 8_000), 10);
  assert.deepEqual(ks.leases(), [{ id: 1n, ttl: 10, expiry: T0 + 18_000 }]);
  assert.throws(() => ks.leaseRenew(2n, T0), errorIs(V3Errors.leaseNotFound));
  assert.throws(() => ks.leaseRenew(1n, T0 + 18_000), errorIs(V3Errors.leaseNotFound));
});

test("expireLeases revokes every due lease by id, one revision per lease with keys", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 30n, ttl: 2 }, T0);
  ks.leaseGrant({ id: 10n, ttl: 5 }, T0);
  ks.leaseGrant({ id: 20n, ttl: 2 }, T0);
  ks.leaseGrant({ id: 40n, ttl: 60 }, T0);
  ks.put(putReq("a", "1", { lease: 30n })); // 2
  ks.put(putReq("b", "1", { lease: 10n })); // 3
  ks.put(putReq("c", "1", { lease: 40n })); // 4
  assert.equal(ks.leaseCount, 4);
  assert.equal(ks.nextLeaseExpiry(), T0 + 2_000);
  assert.deepEqual(ks.expireLeases(T0 + 1_999), { revoked: [], changes: [] });
  const r = ks.expireLeases(T0 + 5_000);
  assert.deepEqual(r.revoked, [10n, 20n, 30n]);
  assert.deepEqual(
    r.changes.map((c) => [c.revision, c.events.map((e) => e.kv.key.toString())]),
    [
      [5, ["b"]],
      [6, ["a"]],
    ],
  );
  assert.deepEqual(ks.leases().map((l) => l.id), [40n]);
  assert.equal(ks.nextLeaseExpiry(), T0 + 60_000);
  assert.deepEqual(keysOf(ks.range(rangeReq("\0", { rangeEnd: FROM_KEY })).kvs), ["c"]);
});

test("leasePromote gives every lease its full TTL plus the extension", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 1n, ttl: 10 }, T0);
  ks.leasePromote(T0 + 9_000, { extendMs: 1_000 });
  assert.deepEqual(ks.leases(), [{ id: 1n, ttl: 10, expiry: T0 + 20_000 }]);
  assert.deepEqual(ks.expireLeases(T0 + 19_999).revoked, []);
});

test("a lease checkpoint sets the remaining TTL a new leader starts from; 0 clears it; unknown leases are skipped", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 1n, ttl: 60 }, T0);
  ks.leaseGrant({ id: 2n, ttl: 30 }, T0);
  const hash = ks.hash();
  assert.deepEqual(ks.leaseCheckpoint([{ id: 1n, remainingTtl: 42 }, { id: 3n, remainingTtl: 7 }, { id: 2n, remainingTtl: 9 }]), { revision: 1 });
  assert.equal(ks.revision, 1, "a checkpoint takes no revision");
  assert.deepEqual(ks.leases(), [
    { id: 1n, ttl: 60, expiry: T0 + 60_000, remainingTtl: 42 },
    { id: 2n, ttl: 30, expiry: T0 + 30_000, remainingTtl: 9 },
  ]);
  assert.equal(ks.leaseRemainingTtl(1n), 42);
  assert.equal(ks.leaseRemainingTtl(3n), undefined);
  assert.equal(ks.timeToLive(1n, T0 + 1000)?.grantedTtl, 60, "the granted TTL stays");
  assert.equal(ks.hash(), hash, "checkpoints are not part of the hash (they need not survive a restart)");
  ks.leaseCheckpoint([{ id: 1n, remainingTtl: 0 }, { id: 2n, remainingTtl: -5 }]);
  assert.deepEqual(ks.leases(), [
    { id: 1n, ttl: 60, expiry: T0 + 60_000 },
    { id: 2n, ttl: 30, expiry: T0 + 30_000 },
  ]);
  assert.equal(ks.leaseRemainingTtl(1n), 0);
});

test("key space image round trip keeps leases, attachments and hash", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 7n, ttl: 60 }, T0);
  ks.leaseGrant({ id: 8n, ttl: 5 }, T0);
  ks.put(putReq("a", "1", { lease: 7n }));
  ks.put(putReq("b", "1", { lease: 7n }));
  ks.put(putReq("c", "1", { lease: 8n }));
  ks.put(putReq("d", "1"));
  const restored = V3KeySpace.fromImage(JSON.parse(JSON.stringify(ks.toImage())));
  assert.equal(restored.hash(), ks.hash());
  assert.deepEqual(keysOfLease(restored, 7n), ["a", "b"]);
  for (const s of [ks, restored]) {
    s.expireLeases(T0 + 6_000);
    s.leaseRevoke(7n);
  }
  assert.equal(restored.hash(), ks.hash());
  assert.deepEqual(keysOf(restored.range(rangeReq("\0", { rangeEnd: FROM_KEY })).kvs), ["d"]);
});

test("key space hash covers leases", () => {
  const a = new V3KeySpace();
  const c = new V3KeySpace();
  a.leaseGrant({ id: 1n, ttl: 10 }, T0);
  c.leaseGrant({ id: 1n, ttl: 10 }, T0 + 1);
  assert.notEqual(a.hash(), c.hash());
});

test("fromImage rejects a key attached to a missing lease", () => {
  const ks = new V3KeySpace();
  ks.leaseGrant({ id: 7n, ttl: 60 }, T0);
  ks.put(putReq("a", "1", { lease: 7n }));
  const img = ks.toImage();
  img.leases.leases = [];
  assert.throws(() => V3KeySpace.fromImage(img), /unknown lease 7/);
  assert.throws(() => V3KeySpace.fromImage({ ...img, format: "x" as "kvctl-v3/1" }), /unknown format/);
});

test("an alarm type etcd does not know is raised, listed, kept by the backend and cleared, and caps nothing", () => {
  const written = new Map<string, AlarmMember>();
  const sink: AlarmSink = { putAlarm: (a) => written.set(`${a.alarm}/${a.memberId}`, { ...a }), removeAlarm: (a) => written.delete(`${a.alarm}/${a.memberId}`) };
  const table = new AlarmTable({ sink });
  const ks = new V3KeySpace();
  const h0 = ks.hash();
  for (const t of [table, ks] as const) {
    const raise = (alarm: number) => (t instanceof AlarmTable ? [t.activate("5", alarm)] : t.alarm({ action: AlarmAction.ACTIVATE, memberId: "5", alarm }));
    assert.deepEqual(raise(9), [{ memberId: "5", alarm: 9 }]);
    assert.deepEqual(raise(-1), [{ memberId: "5", alarm: -1 }]);
  }
  assert.deepEqual(ks.alarms(), [{ memberId: "5", alarm: 9 }, { memberId: "5", alarm: -1 }]);
  assert.deepEqual(ks.alarm({ action: AlarmAction.GET, memberId: "0", alarm: 9 }), [{ memberId: "5", alarm: 9 }]);
  assert.deepEqual(ks.alarms(AlarmType.NOSPACE), []);
  assert.deepEqual(ks.alarms(AlarmType.CORRUPT), []);
  assert.notEqual(ks.hash(), h0);
  // No NOSPACE behaviour: writes and lease grants go on.
  ks.put(putReq("a", "1"));
  ks.txn(txnReq({ success: [opPut("b", "2")] }));
  ks.leaseGrant({ id: 7n, ttl: 10 }, T0);
  // What the backend was handed is what a restart or a snapshot's restore loads.
  assert.deepEqual([...written.values()], table.get(AlarmType.NONE));
  const reloaded = new AlarmTable({ alarms: written.values() });
  assert.deepEqual(reloaded.get(AlarmType.NONE), [{ memberId: "5", alarm: 9 }, { memberId: "5", alarm: -1 }]);
  assert.equal(reloaded.has(AlarmType.NOSPACE), false);
  // DEACTIVATE clears it; a second time answers nothing.
  assert.deepEqual(ks.alarm({ action: AlarmAction.DEACTIVATE, memberId: "5", alarm: 9 }), [{ memberId: "5", alarm: 9 }]);
  assert.deepEqual(ks.alarm({ action: AlarmAction.DEACTIVATE, memberId: "5", alarm: 9 }), []);
  assert.deepEqual(ks.alarms(), [{ memberId: "5", alarm: -1 }]);
  table.deactivate("5", 9);
  assert.deepEqual([...written.values()], [{ memberId: "5", alarm: -1 }]);
});
