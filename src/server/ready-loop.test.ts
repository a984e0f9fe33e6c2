// The safety orderings of ready-loop.ts (S1-S6), checked against a fake member: Readys are
// handed in by the test, every call the loop makes is recorded in order, and each WAL save
// finishes only when the test says, so "before the save completed" is an observable moment.
import assert from "node:assert/strict";
import { test } from "node:test";
import { EntryType, MessageType, StateType, message, type Entry, type HardState, type Message, type Ready, type Snapshot } from "../raft/index.ts";
import { DiskWaitPolicy, defaultDiskWaitOptions } from "./disk-wait.ts";
import type { Logger } from "./logger.ts";
import { ReadyLoop, mayPipeline, type ReadyLoopHost } from "./ready-loop.ts";
import { WriteTracer } from "./write-trace.ts";

const SELF = 1;
const typeName = new Map<number, string>(Object.entries(MessageType).map(([k, v]) => [v, k]));
const noop = (): void => {};
const silent: Logger = { debug: noop, info: noop, warn: noop, error: noop };

interface Cmd {
  m: number;
  name: string;
}

const entry = (index: number, name = `e${index}`, term = 1): Entry => ({ index, term, type: EntryType.Normal, data: Buffer.from(name) });
const hs = (commit: number, term = 1, vote = 0): HardState => ({ term, vote, commit });

function ready(r: Partial<Ready>): Ready {
  return { readStates: [], entries: [], committedEntries: [], messages: [], mustSync: false, ...r };
}

/** A member whose log of calls the tests read; saves wait for release(). */
function fakeMember(opts: { leader?: boolean; onLoop?: boolean; appendable?: boolean; alone?: boolean } = {}) {
  const events: string[] = [];
  const readys: Ready[] = [];
  let saving: Array<(took: { ms: number; cpuWaitMs: number }) => void> = [];
  /** The loop thread's run-queue wait so far (ms); undefined: the kernel does not say. */
  let cpuWait: number | undefined = 0;
  let gate: Promise<void> | undefined;
  let pendingSnapshot = false;
  const diskWait = new DiskWaitPolicy();
  let requests = 0;
  let appended = 0;
  /** The last append the running fdatasync covers, if one runs. */
  let syncTarget: number | undefined;
  let syncWaiters: Array<{ seq: number; resolve: (ms: number | undefined) => void }> = [];
  const startSync = (): void => {
    const target = appended;
    syncTarget = target;
    saving.push((took) => {
      syncTarget = undefined;
      events.push("synced");
      host.wal.onSyncReturn?.();
      if (appended > target && syncTarget === undefined) startSync();
      const done = syncWaiters.filter((w) => w.seq <= target);
      syncWaiters = syncWaiters.filter((w) => w.seq > target);
      done.forEach((w, i) => w.resolve(i === 0 ? took.ms : undefined));
    });
  };
  const host: ReadyLoopHost<Cmd> = {
    memberId: SELF,
    node: {
      hasReady: () => readys.length > 0,
      ready: () => readys.shift()!,
      advance: () => void events.push("advance"),
    },
    wal: {
      save: (h, entries, o) => {
        events.push(`save ${entries.map((e) => e.index).join(",")}${h === null ? "" : ` commit=${h.commit}`}${o.onLoop === true ? " on-loop" : ""}`);
        return new Promise<number>((resolve) => saving.push((took) => {
          events.push("saved");
          if (cpuWait !== undefined) cpuWait += took.cpuWaitMs;
          resolve(took.ms);
        }));
      },
      // As Wal.append: one fdatasync at a time, for every append written before it began.
      append: (h, entries) => {
        events.push(`append ${entries.map((e) => e.index).join(",")}${h === null ? "" : ` commit=${h.commit}`}`);
        const seq = ++appended;
        const done = new Promise<number | undefined>((resolve) => syncWaiters.push({ seq, resolve }));
        if (syncTarget === undefined) startSync();
        return done;
      },
      get appendable() {
        return opts.appendable === true;
      },
      get syncing() {
        return syncTarget !== undefined;
      },
      onSyncReturn: undefined,
      saveCommitUnsynced: (h) => void events.push(`commit unsynced ${h.commit}`),
    },
    storage: {
      setHardState: (h) => void events.push(`storage hardstate commit=${h.commit}`),
      append: (es) => void events.push(`storage append ${es.map((e) => e.index).join(",")}`),
    },
    snapshots: {
      withoutStale: (msgs) => msgs,
      install: async (snap: Snapshot) => {
        events.push(`install snapshot ${snap.metadata.index}`);
        await Promise.resolve();
        events.push("snapshot installed");
      },
      get pending() {
        return pendingSnapshot;
      },
      record: async () => {
        pendingSnapshot = false;
        events.push("record snapshot");
      },
      maybeStart: noop,
    },
    reads: {
      onReadState: (index) => void events.push(`read state ${index}`),
      release: () => void events.push("release reads"),
    },
    diskWait,
    runQueueWaitMs: () => cpuWait,
    tracer: new WriteTracer(0, silent),
    metrics: { walSynced: noop },
    isLeader: () => opts.leader === true,
    alone: () => opts.alone === true,
    stopped: () => false,
    clientRequests: () => requests,
    proposals: () => requests,
    send: (msgs) => void events.push(`send ${msgs.map((m) => `${typeName.get(m.type) ?? m.type}->${m.to}`).join(" ")}`),
    leaderSeen: (lead) => void events.push(`leader ${lead}`),
    hardStateSeen: noop,
    decode: (e) => ({ m: SELF, name: Buffer.from(e.data).toString() }),
    applyGate: () => gate,
    apply: (e, cmd) => void events.push(`apply ${e.index} ${cmd?.name ?? ""}`.trim()),
    appliedBatch: () => void events.push("applied batch"),
    fatal: (err) => {
      throw err;
    },
  };
  // Every save waits on the loop or not, as the test wants: a write request per proposal, or two.
  if (opts.onLoop !== true) diskWait.took(performance.now(), 1e9);
  return {
    host,
    events,
    push: (...rs: Ready[]) => readys.push(...rs),
    request: () => requests++,
    /** Completes the oldest save in flight: its fdatasync took `ms`, `cpuWaitMs` of them waiting for a CPU. */
    finishSave: (took = { ms: 0.1, cpuWaitMs: 0 }) => {
      const f = saving.shift();
      assert.ok(f, "a save is in flight");
      f(took);
    },
    cpuWaitUnknown: () => (cpuWait = undefined),
    get saving() {
      return saving.length;
    },
    setGate: (g: Promise<void> | undefined) => (gate = g),
    snapshotMade: () => (pendingSnapshot = true),
    reset: () => {
      events.length = 0;
      saving = [];
    },
  };
}

/**
 * Turns of the event loop until `cond` holds. The loop under test waits only on promises
 * and setImmediate, never on a timer, so each turn lets it take its next step; a thousand
 * turns without the step fail the test with `what` and the calls seen.
 */
async function turnsUntil(cond: () => boolean, what: string, events: string[]): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await new Promise<void>((r) => setImmediate(r));
  }
  assert.fail(`${what}: not within 1000 turns of the event loop (${events.join(" | ")})`);
}

/** Until a save started: from then on the loop waits for the test's finishSave(). */
const saveStarted = (events: string[]): Promise<void> => turnsUntil(() => events.some((e) => e.startsWith("save")), "a save started", events);

/**
 * To show that the loop does nothing more while it waits on the test: it has no timer to
 * wait for, so ten turns of the event loop are more than any step it could take.
 */
async function quiet(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((r) => setImmediate(r));
}

const before = (events: string[], a: string, b: string): boolean => {
  const ia = events.findIndex((e) => e.startsWith(a));
  const ib = events.findIndex((e) => e.startsWith(b));
  assert.ok(ia >= 0, `${a} happened (${events.join(" | ")})`);
  assert.ok(ib >= 0, `${b} happened (${events.join(" | ")})`);
  return ia < ib;
};

test("S2: a follower's acknowledgement and vote leave only after the save of their Ready completed", async () => {
  const f = fakeMember();
  const loop = new ReadyLoop(f.host);
  const ack = message({ type: MessageType.MsgAppResp, to: 2, from: SELF, index: 5 });
  const vote = message({ type: MessageType.MsgVoteResp, to: 3, from: SELF });
  const prop = message({ type: MessageType.MsgProp, to: 2, from: SELF });
  f.push(ready({ entries: [entry(5)], hardState: hs(4, 2, 3), mustSync: true, messages: [ack, vote, prop] }));
  const done = loop.drain();
  await saveStarted(f.events);
  assert.deepEqual(f.events.filter((e) => e.startsWith("send")), ["send MsgProp->2"], "only the proposal, which promises nothing, before the save");
  f.finishSave();
  await done;
  assert.ok(before(f.events, "saved", "send MsgAppResp->2 MsgVoteResp->3"));
});

test("S2: a leader's appends may leave before its own save, a vote it sent as a follower in the same Ready may not", async () => {
  const f = fakeMember({ leader: true });
  const loop = new ReadyLoop(f.host);
  const app = message({ type: MessageType.MsgApp, to: 2, from: SELF, entries: [entry(7)] });
  const vote = message({ type: MessageType.MsgVoteResp, to: 3, from: SELF });
  f.push(ready({ entries: [entry(7)], mustSync: true, messages: [app, vote] }));
  const done = loop.drain();
  await saveStarted(f.events);
  assert.deepEqual(f.events.filter((e) => e.startsWith("send")), ["send MsgApp->2"]);
  f.finishSave();
  await done;
  assert.ok(before(f.events, "saved", "send MsgVoteResp->3"));
});

test("S3, S4, S6: committed entries are applied after the save, Raft's storage gets them after the disk, advance comes last", async () => {
  // A single voter: the entry is committed in the Ready that first carries it.
  const f = fakeMember({ leader: true });
  const loop = new ReadyLoop(f.host);
  f.push(ready({ entries: [entry(3)], committedEntries: [entry(3)], hardState: hs(3), mustSync: true, readStates: [{ index: 3, requestCtx: new Uint8Array(1) }] }));
  const done = loop.drain();
  await saveStarted(f.events);
  assert.equal(f.events.filter((e) => e.startsWith("apply")).length, 0, "nothing applied while the save runs");
  assert.equal(f.events.filter((e) => e.startsWith("storage")).length, 0, "Raft's storage unchanged while the save runs");
  f.finishSave();
  await done;
  assert.deepEqual(f.events, [
    "save 3 commit=3",
    "saved",
    "storage hardstate commit=3",
    "storage append 3",
    "read state 3",
    "apply 3 e3",
    "applied batch",
    "release reads",
    "advance",
  ]);
});

test("S1: a snapshot from the leader is installed before the Ready's entries are saved or applied", async () => {
  const f = fakeMember();
  const loop = new ReadyLoop(f.host);
  const snapshot: Snapshot = { data: new Uint8Array(0), metadata: { index: 10, term: 2, confState: { voters: [1, 2, 3], learners: [] } } };
  f.push(ready({ snapshot, entries: [entry(11)], committedEntries: [entry(11)], hardState: hs(11, 2), mustSync: true }));
  const done = loop.drain();
  await saveStarted(f.events);
  f.finishSave();
  await done;
  assert.ok(before(f.events, "snapshot installed", "save 11"));
  assert.ok(before(f.events, "snapshot installed", "apply 11"));
});

test("S5: one Ready at a time; proposals made during a save go together in the next one, and a snapshot is recorded between Readys", async () => {
  const f = fakeMember({ leader: true });
  const loop = new ReadyLoop(f.host);
  f.push(ready({ entries: [entry(1)], committedEntries: [entry(1)], mustSync: true }));
  loop.kick();
  await saveStarted(f.events);
  assert.equal(f.saving, 1);
  // While the first save runs: more proposals, and a snapshot made in the background.
  f.push(ready({ entries: [entry(2), entry(3)], committedEntries: [entry(2), entry(3)], mustSync: true }));
  f.snapshotMade();
  loop.kick();
  loop.kick();
  await quiet();
  assert.equal(f.saving, 1, "no second save while the first runs");
  assert.ok(loop.busy);
  f.finishSave();
  await turnsUntil(() => f.events.includes("save 2,3"), "the next Ready's save", f.events);
  assert.equal(f.saving, 1, "the next Ready's save, with both entries");
  assert.ok(f.events.includes("save 2,3"));
  assert.ok(!f.events.includes("record snapshot"), "not while a save runs");
  f.finishSave();
  await turnsUntil(() => !loop.busy, "the loop done", f.events);
  assert.ok(before(f.events, "advance", "record snapshot"));
  assert.equal(f.events.at(-1), "record snapshot");
});

test("S3: while an apply gate is closed (defragmentation, backup) committed entries wait, after their save", async () => {
  const f = fakeMember({ leader: true });
  const loop = new ReadyLoop(f.host);
  let open!: () => void;
  f.setGate(new Promise<void>((r) => (open = r)));
  f.push(ready({ entries: [entry(4)], committedEntries: [entry(4)], mustSync: true }));
  const done = loop.drain();
  await saveStarted(f.events);
  f.finishSave();
  // The loop asks for the gate right after Raft's storage took the entry, in the same step.
  await turnsUntil(() => f.events.includes("storage append 4"), "the saved entry in Raft's storage", f.events);
  assert.ok(f.events.includes("saved"));
  assert.equal(f.events.filter((e) => e.startsWith("apply")).length, 0);
  open();
  await done;
  assert.ok(f.events.includes("apply 4 e4"));
});

test("a Ready that only moves the commit index writes it without an fdatasync, before applying", async () => {
  const f = fakeMember();
  const loop = new ReadyLoop(f.host);
  f.push(ready({ hardState: hs(8), committedEntries: [entry(8)] }));
  await loop.drain();
  assert.deepEqual(f.events.slice(0, 3), ["commit unsynced 8", "storage hardstate commit=8", "apply 8 e8"]);
  assert.equal(f.events.filter((e) => e.startsWith("save")).length, 0);
});

test("tuning, not safety: a lone write's save waits on the loop, after one turn that lets requests already read join it", async () => {
  const f = fakeMember({ leader: true, onLoop: true });
  const loop = new ReadyLoop(f.host);
  f.request();
  f.push(ready({ entries: [entry(1)], committedEntries: [entry(1)], mustSync: true }));
  const done = loop.drain();
  // The save has not started yet: the loop gave the event loop one turn first.
  assert.equal(f.events.filter((e) => e.startsWith("save")).length, 0);
  await saveStarted(f.events);
  assert.ok(f.events.includes("save 1 on-loop"));
  f.finishSave();
  await done;

  // A request that arrives during that turn sends the save to the threadpool.
  f.reset();
  f.request();
  f.push(ready({ entries: [entry(2)], committedEntries: [entry(2)], mustSync: true }));
  const second = loop.drain();
  f.request();
  await saveStarted(f.events);
  assert.ok(f.events.includes("save 2"), f.events.join(" | "));
  f.finishSave();
  await second;
});

test("tuning, not safety: once a lone writer's turns found nothing loneAfter times in a row, its saves start at once; a second writer brings the turn back", async () => {
  const f = fakeMember({ leader: true, onLoop: true });
  const loop = new ReadyLoop(f.host);
  let index = 0;
  /** One write (and `others` requests read beside it); whether its save started without a turn of the loop. */
  const write = async (others = 0): Promise<boolean> => {
    f.reset();
    f.request();
    for (let i = 0; i < others; i++) f.request();
    index++;
    f.push(ready({ entries: [entry(index)], committedEntries: [entry(index)], mustSync: true }));
    const done = loop.drain();
    const atOnce = f.events.includes(`save ${index} on-loop`);
    await saveStarted(f.events);
    f.finishSave();
    await done;
    return atOnce;
  };
  for (let i = 0; i < defaultDiskWaitOptions.loneAfter; i++) assert.equal(await write(), false, `write ${i + 1}`);
  assert.equal(await write(), true);
  assert.equal(await write(), true);
  await write(1);
  assert.ok(f.events.includes(`save ${index}`), "a request beside the write: off the loop");
  assert.equal(f.host.diskWait.lone, false, "and the run ends");
});

test("tuning, not safety: after a lone writer's answer on a member without peers the event loop polls until the next request begins; not with peers", async () => {
  const lone = async (leader: boolean, messages: Message[], lonePollMs = 60_000): Promise<{ f: ReturnType<typeof fakeMember>; loop: ReadyLoop<Cmd> }> => {
    const f = fakeMember({ leader, onLoop: true });
    const loop = new ReadyLoop(f.host, { lonePollMs });
    for (let index = 1; index <= defaultDiskWaitOptions.loneAfter + 1; index++) {
      f.reset();
      f.request();
      f.push(ready({ entries: [entry(index)], committedEntries: [entry(index)], messages, mustSync: true }));
      const done = loop.drain();
      await saveStarted(f.events);
      f.finishSave();
      await done;
    }
    return { f, loop };
  };
  const { f, loop } = await lone(true, []);
  assert.equal(loop.polling, true);
  const turns = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  await turns(20);
  assert.equal(loop.polling, true, "still polling turns later");
  f.request();
  await turns(2);
  assert.equal(loop.polling, false, "a request began");

  // The time is up without a request: the polling ends by itself.
  const g = await lone(true, [], 0.5);
  for (let i = 0; i < 10_000 && g.loop.polling; i++) await turns(1);
  assert.equal(g.loop.polling, false);

  const withPeers = await lone(true, [message({ type: MessageType.MsgApp, to: 2, from: SELF, index: 1 })]);
  assert.equal(withPeers.loop.polling, false, "a leader with followers");
  const follower = await lone(false, []);
  assert.equal(follower.loop.polling, false, "a follower");
  // Nothing polls on after the test.
  f.request();
  await turns(2);
});

test("tuning, not safety: a follower's lone save waits on the loop at once, and its acknowledgement leaves in the same turn", async () => {
  const f = fakeMember({ onLoop: true });
  const loop = new ReadyLoop(f.host);
  const ack = message({ type: MessageType.MsgAppResp, to: 2, from: SELF, index: 1 });
  f.push(ready({ entries: [entry(1)], messages: [ack], mustSync: true }));
  const done = loop.drain();
  // No turn of the event loop first: nothing a follower reads could join its save.
  assert.deepEqual(f.events, ["save 1 on-loop"]);
  f.finishSave();
  await done;
  assert.deepEqual(f.events.slice(1, 4), ["saved", "storage append 1", "send MsgAppResp->2"]);
});

test("tuning, not safety: an on-loop fdatasync slow only because the thread waited for a CPU keeps the next save on the loop; a slow disk does not", async () => {
  const f = fakeMember({ leader: true, onLoop: true });
  const loop = new ReadyLoop(f.host);
  let index = 0;
  /** One lone write; whether its save waited on the loop. */
  const write = async (took: { ms: number; cpuWaitMs: number }): Promise<boolean> => {
    f.reset();
    f.request();
    index++;
    f.push(ready({ entries: [entry(index)], committedEntries: [entry(index)], mustSync: true }));
    const done = loop.drain();
    await saveStarted(f.events);
    const onLoop = f.events.includes(`save ${index} on-loop`);
    f.finishSave(took);
    await done;
    return onLoop;
  };
  assert.equal(await write({ ms: 15, cpuWaitMs: 14 }), true);
  assert.equal(await write({ ms: 0.3, cpuWaitMs: 0 }), true, "15 ms of wall time, 1 ms of it on the disk");
  assert.equal(await write({ ms: 15, cpuWaitMs: 2 }), true);
  assert.equal(await write({ ms: 0.3, cpuWaitMs: 0 }), false, "13 ms on the disk: the threadpool for the back-off");

  const g = fakeMember({ leader: true, onLoop: true });
  g.cpuWaitUnknown();
  const gLoop = new ReadyLoop(g.host);
  g.request();
  g.push(ready({ entries: [entry(1)], committedEntries: [entry(1)], mustSync: true }));
  let done = gLoop.drain();
  await saveStarted(g.events);
  g.finishSave({ ms: 15, cpuWaitMs: 14 });
  await done;
  g.reset();
  g.request();
  g.push(ready({ entries: [entry(2)], committedEntries: [entry(2)], mustSync: true }));
  done = gLoop.drain();
  await saveStarted(g.events);
  assert.ok(g.events.includes("save 2"), `where the CPU wait is unknown the wall time counts: ${g.events.join(" | ")}`);
  g.finishSave();
  await done;
});

/** A leader whose first Ready (a new term's hard state) went the classic way, saved and applied. */
async function pipeliningLeader(opts: { alone?: boolean } = {}) {
  const f = fakeMember({ leader: true, appendable: true, alone: opts.alone ?? true });
  const loop = new ReadyLoop(f.host);
  f.push(ready({ entries: [entry(1)], committedEntries: [entry(1)], hardState: hs(1), mustSync: true }));
  const done = loop.drain();
  await saveStarted(f.events);
  f.finishSave();
  await done;
  f.reset();
  return { f, loop };
}

test("pipelined: a leader's batch is written at once; the next waits for the running fdatasync, is written when it returns, before the first one's apply, and joins the next (S3, S5)", async () => {
  const { f, loop } = await pipeliningLeader();
  f.push(ready({ entries: [entry(2)], committedEntries: [entry(2)], hardState: hs(2), mustSync: true }));
  await loop.drain();
  assert.deepEqual(f.events, ["append 2 commit=2", "storage hardstate commit=2", "storage append 2", "advance"], "written, advanced, not applied");
  assert.equal(loop.busy, true, "it still owes its apply");
  f.push(ready({ entries: [entry(3), entry(4)], committedEntries: [entry(3), entry(4)], hardState: hs(4), mustSync: true }));
  await loop.drain();
  loop.kick();
  await quiet();
  assert.ok(!f.events.includes("append 3,4 commit=4"), `the next batch waits for the running fdatasync: ${f.events.join(" | ")}`);
  f.finishSave();
  await turnsUntil(() => f.events.includes("apply 2 e2"), "the first batch applied", f.events);
  assert.deepEqual(f.events.slice(f.events.indexOf("synced"), f.events.indexOf("apply 2 e2") + 1), ["synced", "append 3,4 commit=4", "storage hardstate commit=4", "storage append 3,4", "advance", "apply 2 e2"], "written in the fdatasync's return, before the apply");
  await quiet();
  assert.ok(!f.events.includes("apply 3 e3"), "the second waits for its own fdatasync");
  f.finishSave();
  await turnsUntil(() => !loop.busy, "the second batch applied", f.events);
  assert.deepEqual(f.events.slice(f.events.lastIndexOf("synced")), ["synced", "apply 3 e3", "apply 4 e4", "applied batch", "release reads"]);
});

test("pipelined: a Ready that may not be pipelined, and a made snapshot's record, wait until the pipelined ones are applied (S5)", async () => {
  const { f, loop } = await pipeliningLeader();
  f.push(ready({ entries: [entry(2)], committedEntries: [entry(2)], hardState: hs(2), mustSync: true }));
  await loop.drain();
  const cc: Entry = { index: 3, term: 1, type: EntryType.ConfChange, data: Buffer.from("cc") };
  f.push(ready({ entries: [cc], hardState: hs(2), mustSync: true }));
  f.snapshotMade();
  const done = loop.drain();
  await quiet();
  assert.ok(!f.events.some((e) => e.startsWith("save")), `the membership change is not saved before the pipelined entry is applied: ${f.events.join(" | ")}`);
  f.finishSave();
  await saveStarted(f.events);
  assert.ok(before(f.events, "apply 2", "save 3"));
  f.finishSave();
  await done;
  assert.ok(before(f.events, "apply 2", "record snapshot"));
});

test("pipelined: messages that wait for the save leave after its fdatasync, before the apply; a follower and a leader with peers are never pipelined", async () => {
  const { f, loop } = await pipeliningLeader();
  const app = message({ type: MessageType.MsgApp, to: 2, from: SELF, entries: [entry(2)] });
  const vote = message({ type: MessageType.MsgVoteResp, to: 3, from: SELF });
  f.push(ready({ entries: [entry(2)], committedEntries: [entry(2)], hardState: hs(2), mustSync: true, messages: [app, vote] }));
  await loop.drain();
  assert.deepEqual(f.events.filter((e) => e.startsWith("send")), ["send MsgApp->2"]);
  f.finishSave();
  await turnsUntil(() => !loop.busy, "applied", f.events);
  assert.ok(before(f.events, "synced", "send MsgVoteResp->3") && before(f.events, "send MsgVoteResp->3", "apply 2"));

  const g = fakeMember({ appendable: true, alone: true });
  const gLoop = new ReadyLoop(g.host);
  for (const i of [1, 2]) {
    g.push(ready({ entries: [entry(i)], hardState: hs(i - 1), mustSync: true }));
    const done = gLoop.drain();
    await saveStarted(g.events);
    g.finishSave();
    await done;
  }
  assert.ok(!g.events.some((e) => e.startsWith("append")), g.events.join(" | "));

  const { f: h, loop: hLoop } = await pipeliningLeader({ alone: false });
  h.push(ready({ entries: [entry(2)], committedEntries: [entry(2)], hardState: hs(2), mustSync: true }));
  const done = hLoop.drain();
  await saveStarted(h.events);
  assert.ok(!h.events.some((e) => e.startsWith("append")), h.events.join(" | "));
  h.finishSave();
  await done;
});

test("mayPipeline: a leader's Ready of normal entries only; not a follower's, a leader change, a snapshot or a membership change", () => {
  const normal = ready({ entries: [entry(2)], committedEntries: [entry(1)] });
  assert.equal(mayPipeline(normal, true), true);
  assert.equal(mayPipeline(normal, false), false);
  assert.equal(mayPipeline({ ...normal, softState: { lead: SELF, raftState: StateType.Leader } }, true), false);
  const snap: Snapshot = { data: new Uint8Array(0), metadata: { index: 5, term: 1, confState: { voters: [SELF], learners: [] } } };
  assert.equal(mayPipeline({ ...normal, snapshot: snap }, true), false);
  const cc: Entry = { index: 3, term: 1, type: EntryType.ConfChange, data: Buffer.from("cc") };
  assert.equal(mayPipeline(ready({ entries: [cc] }), true), false);
  assert.equal(mayPipeline(ready({ committedEntries: [cc] }), true), false);
});

test("pipelined: a Ready asked for while a pipelined one waits for its apply, with no fdatasync running, is written in the loop's next check phase", async () => {
  const { f, loop } = await pipeliningLeader();
  let open!: () => void;
  f.setGate(new Promise<void>((resolve) => (open = resolve)));
  f.push(ready({ entries: [entry(2)], committedEntries: [entry(2)], hardState: hs(2), mustSync: true }));
  loop.kick();
  await turnsUntil(() => f.events.includes("append 2 commit=2"), "the first pipelined Ready written", f.events);
  f.finishSave();
  await quiet();
  assert.equal(loop.busy, true, "its apply waits for the gate");
  f.push(ready({ entries: [entry(3)], committedEntries: [entry(3)], hardState: hs(3), mustSync: true }));
  loop.kick();
  await turnsUntil(() => f.events.includes("append 3 commit=3"), "the next one written while the first waits to be applied", f.events);
  f.setGate(undefined);
  open();
  f.finishSave();
  await turnsUntil(() => !loop.busy, "all applied", f.events);
  assert.deepEqual(f.events.filter((e) => e.startsWith("apply")), ["apply 2 e2", "apply 3 e3"]);
});
