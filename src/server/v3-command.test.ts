import { test } from "node:test";
import assert from "node:assert/strict";
import { V2Store } from "../store/v2/store.ts";
import { V3KeySpace, CompareResult, CompareTarget, type TxnRequest } from "../store/v3/index.ts";
import { V2AuthState, V3AuthState } from "../auth/index.ts";
import { Membership } from "./membership.ts";
import { applyCommand, type StateMachine } from "./apply.ts";
import { decodeCommand, encodeCommand, type Command } from "./request.ts";

const b = (s: string): Buffer => Buffer.from(s, "latin1");

function fresh(): StateMachine {
  return {
    store: new V2Store(),
    membership: new Membership(1, [{ id: 1, name: "a", peerUrls: ["http://127.0.0.1:1"], clientUrls: [] }]),
    auth: new V2AuthState(),
    v3: new V3KeySpace(),
    v3auth: new V3AuthState(),
  };
}

const txn: TxnRequest = {
  compare: [{ target: CompareTarget.VALUE, result: CompareResult.EQUAL, key: b("k\u00ff"), rangeEnd: b(""), value: b("\u0000\u0001") }],
  success: [{ put: { key: b("k\u00ff"), value: b("v"), lease: 0n, prevKv: true, ignoreValue: false, ignoreLease: false } }],
  failure: [{ put: { key: b("k\u00ff"), value: b("\u0000\u0001"), lease: 0n, prevKv: false, ignoreValue: false, ignoreLease: false } }],
};

const commands: Command[] = [
  { t: "v3", m: 1, id: 1, time: 1000, op: { k: "leaseGrant", id: 9_223_372_036_854_775_807n, ttl: 10 } },
  { t: "v3", m: 1, id: 2, time: 1001, op: { k: "txn", r: txn } },
  { t: "v3", m: 1, id: 3, time: 1002, op: { k: "txn", r: txn } },
  { t: "v3", m: 1, id: 4, time: 1003, op: { k: "put", r: { key: b("leased"), value: b("x"), lease: 9_223_372_036_854_775_807n, prevKv: false, ignoreValue: false, ignoreLease: false } } },
  { t: "sync", m: 1, id: 5, time: 1003 + 10_000 },
];

test("a v3 command keeps its bytes and int64 lease IDs through the log encoding", () => {
  for (const c of commands) assert.deepStrictEqual(decodeCommand(encodeCommand(c)), c);
});

test("applying the same v3 commands gives the same state on two members, with lease expiry from the SYNC time", () => {
  const [x, y] = [fresh(), fresh()];
  const results = commands.map((c, i) => {
    const r1 = applyCommand(x, decodeCommand(encodeCommand(c)), i + 1);
    const r2 = applyCommand(y, decodeCommand(encodeCommand(c)), i + 1);
    assert.deepStrictEqual(r1, r2);
    return r1;
  });
  assert.equal(x.v3.hash(), y.v3.hash());
  // The txn's failure branch wrote \0\1, so the second txn took its success branch.
  assert.ok(results[2]!.ok && (results[2] as { v3: { succeeded: boolean } }).v3.succeeded);
  // The SYNC at grant time + TTL revoked the lease and deleted its key in one revision.
  const sync = results[4]!;
  assert.ok(sync.ok && sync.changes?.length === 1 && sync.changes[0]!.events[0]!.kv.key.equals(b("leased")));
  assert.equal(x.v3.leaseCount, 0);
});

test("a refused v3 operation is a typed result, not an exception, and changes nothing", () => {
  const sm = fresh();
  const r = applyCommand(sm, { t: "v3", m: 1, id: 1, time: 1, op: { k: "leaseRevoke", id: 5n } }, 1);
  assert.equal(r.ok, false);
  assert.match(String(!r.ok && r.error.message), /requested lease not found/);
  assert.equal(sm.v3.revision, 1);
});
