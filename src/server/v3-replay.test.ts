// A crash between the WAL's fsync and the v3 database's commit: the WAL holds entries
// whose v3 effects the database does not. A restart replays the WAL over the snapshot; the
// v3 effects of entries at or below the database's consistent index are skipped (they are
// in the file), the rest applied. Built here for a crash after every entry of a history.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { V2AuthState, V3AuthState } from "../auth/index.ts";
import { MvccDb } from "../backend/index.ts";
import { V2Store } from "../store/v2/store.ts";
import { V3KeySpace } from "../store/v3/index.ts";
import { applyCommand, type StateMachine } from "./apply.ts";
import { Membership } from "./membership.ts";
import { decodeCommand, encodeCommand, type Command, type CommandBody } from "./request.ts";

const dir = mkdtempSync(join(tmpdir(), "kvctl-replay-"));
after(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.UTC(2026, 0, 1);
const kv = (key: string, value: string, lease = 0n) => ({ key: Buffer.from(key), value: Buffer.from(value), lease, prevKv: false, ignoreValue: false, ignoreLease: false });

/** The history: v3 writes, a lease that expires through a SYNC, a compaction, an alarm, v2 writes. */
function history(): Command[] {
  const c: CommandBody[] = [
    { t: "v3", time: T0, op: { k: "put", r: kv("a", "1") } },
    { t: "v2", time: T0, r: { method: "PUT", path: "/v2/x", val: "1", dir: false, prevValue: "", prevIndex: 0, recursive: false, sorted: false } },
    { t: "v3", time: T0, op: { k: "leaseGrant", id: 77n, ttl: 5 } },
    { t: "v3", time: T0, op: { k: "put", r: kv("leased", "l", 77n) } },
    { t: "v3", time: T0 + 1, op: { k: "txn", r: { compare: [], success: [{ put: kv("b", "2") }, { put: kv("a", "3") }], failure: [] } } },
    { t: "v3", time: T0 + 2, op: { k: "deleteRange", r: { key: Buffer.from("b"), rangeEnd: Buffer.alloc(0), prevKv: true } } },
    { t: "v3", time: T0 + 3, op: { k: "put", r: kv("c", "4") } },
    { t: "v3", time: T0 + 4, op: { k: "compact", r: { revision: 4, physical: false } } },
    { t: "v3", time: T0 + 5, op: { k: "put", r: kv("missing-lease", "x", 99n) } }, // fails: lease not found
    { t: "sync", time: T0 + 10_000 }, // expires lease 77: "leased" goes
    { t: "v3", time: T0 + 10_001, op: { k: "alarm", r: { action: 1, memberId: "1", alarm: 1 } } },
    { t: "v3", time: T0 + 10_002, op: { k: "put", r: kv("d", "refused under NOSPACE") } },
    { t: "v3", time: T0 + 10_003, op: { k: "alarm", r: { action: 2, memberId: "1", alarm: 1 } } },
    { t: "v2", time: T0 + 10_004, r: { method: "PUT", path: "/v2/y", val: "2", dir: false, prevValue: "", prevIndex: 0, recursive: false, sorted: false } },
    { t: "v3", time: T0 + 10_005, op: { k: "put", r: kv("d", "5") } },
  ];
  // Through the log's encoding, as a replayed entry is.
  return c.map((body, i) => decodeCommand(encodeCommand({ ...body, m: 1, id: i + 1 } as Command)));
}

function machine(v3: V3KeySpace): StateMachine {
  return { store: new V2Store(), membership: new Membership(1, []), auth: new V2AuthState(), v3, v3auth: new V3AuthState() };
}

function state(sm: StateMachine): { v2: string; v3: string; revision: number } {
  return { v2: sm.store.save(), v3: sm.v3.hash(), revision: sm.v3.revision };
}

test("every crash point between WAL fsync and database commit replays to the same state", async () => {
  const cmds = history();
  const ref = machine(new V3KeySpace());
  const results = cmds.map((c, i) => applyCommand(ref, c, i + 1));
  assert.ok(results.some((r) => !r.ok), "the history includes refused requests");
  const want = state(ref);

  for (let crashAt = 0; crashAt <= cmds.length; crashAt++) {
    const path = join(dir, `crash${crashAt}`, "db");
    // Before the crash: entries 1..crashAt applied and their v3 effects committed with the index.
    const db = MvccDb.open({ path });
    const before = machine(new V3KeySpace({ backend: db }));
    cmds.slice(0, crashAt).forEach((c, i) => {
      applyCommand(before, c, i + 1);
      db.commit(i + 1);
    });
    await db.flushed();
    await db.close();

    // The restart: the database as committed, everything else from the WAL (no raft snapshot here).
    const reopened = MvccDb.open({ path });
    assert.equal(reopened.consistentIndex, crashAt === 0 ? 0 : lastV3Write(cmds, crashAt), `consistent index after ${crashAt}`);
    const after = machine(V3KeySpace.restore(reopened.load(), reopened));
    const floor = reopened.consistentIndex;
    cmds.forEach((c, i) => {
      applyCommand(after, c, i + 1, { v3: i + 1 > floor });
      reopened.commit(i + 1);
    });
    assert.deepEqual(state(after), want, `crash after entry ${crashAt}`);
    await reopened.flushed();
    await reopened.close();
  }
});

/** The consistent index a commit after each entry leaves: the last entry that changed the v3 state. */
function lastV3Write(cmds: Command[], upTo: number): number {
  const sm = machine(new V3KeySpace());
  let last = 0;
  let before = sm.v3.hash();
  cmds.slice(0, upTo).forEach((c, i) => {
    applyCommand(sm, c, i + 1);
    const h = sm.v3.hash();
    if (h !== before) last = i + 1;
    before = h;
  });
  return last;
}
