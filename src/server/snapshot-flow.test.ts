// The background snapshot job and a stopping member: stop() must wait for the job to let go
// of the database before closing it, and a job that fails once abandoned is not a disk failure.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SnapshotFlow, type SnapshotHost } from "./snapshot-flow.ts";
import { silentLogger } from "./logger.ts";

interface Fake {
  host: SnapshotHost;
  fatal: unknown[];
  saved: number[];
  /** What the install did, in order. */
  steps: string[];
  /** Settles the pending snapshotData call. */
  finish(result: Buffer | Error): void;
}

function fakeHost(applied: number): Fake {
  let settle: ((r: Buffer | Error) => void) | undefined;
  const fake: Fake = {
    fatal: [],
    saved: [],
    steps: [],
    finish: (r) => settle?.(r),
    host: undefined as unknown as SnapshotHost,
  };
  const host: Partial<SnapshotHost> = {
    log: silentLogger,
    snapshotCount: 10,
    catchupEntries: 5,
    maxWals: 0,
    maxSnapshots: 0,
    appliedIndex: () => applied,
    confState: () => ({ voters: [1], learners: [] }),
    storage: (() => ({ term: () => 2, applySnapshot: () => void fake.steps.push("storage") })) as unknown as SnapshotHost["storage"],
    wal: (() => ({ saveSnapshotRef: async () => void fake.steps.push("wal") })) as unknown as SnapshotHost["wal"],
    installed: (index) => void fake.steps.push(`installed ${index}`),
    state: (() => ({
      snapshotData: () =>
        new Promise<Buffer | undefined>((resolve, reject) => {
          settle = (r) => (r instanceof Error ? reject(r) : resolve(r));
        }),
      install: async () => void fake.steps.push("state"),
    })) as unknown as SnapshotHost["state"],
    snapshotter: (() => ({
      save: async (s: { index: number }) => {
        fake.saved.push(s.index);
        fake.steps.push(`save ${s.index}`);
      },
    })) as unknown as SnapshotHost["snapshotter"],
    kick: () => undefined,
    fatal: (err) => void fake.fatal.push(err),
  };
  fake.host = host as SnapshotHost;
  return fake;
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

test("settled() waits for the job being made; a job that fails after it was abandoned is not fatal", async () => {
  const f = fakeHost(20);
  const flow = new SnapshotFlow(f.host, 0);
  flow.maybeStart();
  flow.cancel();
  let settled = false;
  const waiting = flow.settled().then(() => (settled = true));
  await tick();
  assert.equal(settled, false, "the job still reads the state");
  // The database closed under it, say: an abandoned job's error is not the disk failing.
  f.finish(new Error("database closed"));
  await waiting;
  assert.deepEqual(f.fatal, []);
  assert.deepEqual(f.saved, []);
  assert.equal(flow.pending, false);
});

test("a job that fails while wanted is fatal, as etcd's failed snapshot save is", async () => {
  const f = fakeHost(20);
  const flow = new SnapshotFlow(f.host, 0);
  flow.maybeStart();
  f.finish(new Error("EIO"));
  await flow.settled();
  assert.equal(f.fatal.length, 1);
  assert.match(String(f.fatal[0]), /EIO/);
});

test("a job that completes is saved and waits to be recorded; settled() resolves at once with no job", async () => {
  const f = fakeHost(20);
  const flow = new SnapshotFlow(f.host, 0);
  await flow.settled();
  flow.maybeStart();
  f.finish(Buffer.from("state"));
  await flow.settled();
  assert.deepEqual(f.saved, [20]);
  assert.equal(flow.pending, true);
  assert.deepEqual(f.fatal, []);
});

test("installing the leader's snapshot waits for the abandoned job to let go before it writes", async () => {
  const f = fakeHost(20);
  const flow = new SnapshotFlow(f.host, 0);
  flow.maybeStart();
  const snap = { data: new Uint8Array([1]), metadata: { index: 30, term: 3, confState: { voters: [1], learners: [] } } };
  const installing = flow.install(snap);
  await tick();
  assert.deepEqual(f.steps, [], "nothing is written while the job still reads the state");
  f.finish(Buffer.from("state at 20"));
  await installing;
  assert.deepEqual(f.steps, ["save 30", "wal", "storage", "state", "installed 30"], "the abandoned job saved nothing; the install ran whole, after it");
  assert.equal(flow.index, 30);
  assert.equal(flow.pending, false);
  assert.deepEqual(f.fatal, []);
});
