// Progress and Inflights (etcd's tracker/progress_test.go, inflights_test.go).

import assert from "node:assert/strict";
import { test } from "node:test";
import { Inflights } from "./inflights.ts";
import { Progress, ProgressState } from "./progress.ts";

function pr(init: { match: number; next: number; state?: ProgressState }): Progress {
  const p = new Progress({ match: init.match, next: init.next, maxInflight: 256 });
  if (init.state !== undefined) p.state = init.state;
  return p;
}

test("inflights add up to the size, then report full", () => {
  const inf = new Inflights(10);
  for (let i = 0; i < 10; i++) {
    assert.equal(inf.full(), false);
    inf.add(i);
  }
  assert.equal(inf.full(), true);
  assert.throws(() => inf.add(10), { code: "ERR_RAFT_INVARIANT" });
});

test("inflights freeLE frees everything up to an index, across the ring's wrap", () => {
  const inf = new Inflights(10);
  for (let i = 0; i < 10; i++) inf.add(i);
  inf.freeLE(4);
  assert.equal(inf.count(), 5);
  inf.freeLE(8);
  assert.equal(inf.count(), 1);
  // Wrap around the ring.
  for (let i = 10; i < 15; i++) inf.add(i);
  inf.freeLE(12);
  assert.equal(inf.count(), 2);
  inf.freeLE(14);
  assert.equal(inf.count(), 0);
  // Stale frees are no-ops.
  inf.add(20);
  inf.freeLE(3);
  assert.equal(inf.count(), 1);
});

test("inflights freeFirstOne frees exactly the oldest", () => {
  const inf = new Inflights(10);
  for (let i = 0; i < 10; i++) inf.add(i);
  inf.freeFirstOne();
  assert.equal(inf.count(), 9);
  assert.equal(inf.full(), false);
});

test("progress isPaused per state", () => {
  for (const [state, probeSent, w] of [
    [ProgressState.Probe, false, false],
    [ProgressState.Probe, true, true],
    [ProgressState.Replicate, false, false],
    [ProgressState.Replicate, true, false],
    [ProgressState.Snapshot, false, true],
    [ProgressState.Snapshot, true, true],
  ] as const) {
    const p = pr({ match: 0, next: 0, state });
    p.probeSent = probeSent;
    assert.equal(p.isPaused(), w, `${state} probeSent=${probeSent}`);
  }
});

test("an ack resumes a paused probe", () => {
  const p = pr({ match: 0, next: 2 });
  p.probeSent = true;
  p.maybeDecrTo(1, 1);
  assert.equal(p.probeSent, false);
  p.probeSent = true;
  p.maybeUpdate(2);
  assert.equal(p.probeSent, false);
});

test("becomeProbe restarts after match, or after a snapshot sent", () => {
  const cases = [
    { p: pr({ match: 1, next: 5, state: ProgressState.Replicate }), wnext: 2 },
    { p: pr({ match: 1, next: 5, state: ProgressState.Snapshot }), snap: 10, wnext: 11 },
    { p: pr({ match: 1, next: 5, state: ProgressState.Snapshot }), snap: 0, wnext: 2 },
  ];
  for (const c of cases) {
    if (c.snap !== undefined) c.p.pendingSnapshot = c.snap;
    c.p.becomeProbe();
    assert.equal(c.p.state, ProgressState.Probe);
    assert.equal(c.p.match, 1);
    assert.equal(c.p.next, c.wnext);
  }
});

test("becomeReplicate and becomeSnapshot", () => {
  const p = pr({ match: 1, next: 5 });
  p.becomeReplicate();
  assert.deepStrictEqual([p.state, p.match, p.next], [ProgressState.Replicate, 1, 2]);
  p.becomeSnapshot(10);
  assert.deepStrictEqual([p.state, p.match, p.pendingSnapshot], [ProgressState.Snapshot, 1, 10]);
});

test("maybeUpdate moves match and next forward only", () => {
  const [prevM, prevN] = [3, 5];
  for (const [update, wm, wn, wok] of [
    [prevM - 1, prevM, prevN, false],
    [prevM, prevM, prevN, false],
    [prevM + 1, prevM + 1, prevN, true],
    [prevM + 2, prevM + 2, prevN + 1, true],
  ] as const) {
    const p = pr({ match: prevM, next: prevN });
    assert.equal(p.maybeUpdate(update), wok);
    assert.equal(p.match, wm);
    assert.equal(p.next, wn);
  }
});

test("maybeDecrTo ignores stale rejections and otherwise lowers next using the hint", () => {
  const cases = [
    // Replicate: reject at or below match is stale.
    { state: ProgressState.Replicate, m: 5, n: 10, rejected: 5, last: 5, w: false, wn: 10 },
    { state: ProgressState.Replicate, m: 5, n: 10, rejected: 4, last: 4, w: false, wn: 10 },
    { state: ProgressState.Replicate, m: 5, n: 10, rejected: 9, last: 9, w: true, wn: 6 },
    // Probe: only a rejection of next-1 counts.
    { state: ProgressState.Probe, m: 0, n: 0, rejected: 0, last: 0, w: false, wn: 0 },
    { state: ProgressState.Probe, m: 0, n: 10, rejected: 5, last: 5, w: false, wn: 10 },
    { state: ProgressState.Probe, m: 0, n: 10, rejected: 9, last: 9, w: true, wn: 9 },
    { state: ProgressState.Probe, m: 0, n: 2, rejected: 1, last: 1, w: true, wn: 1 },
    { state: ProgressState.Probe, m: 0, n: 1, rejected: 0, last: 0, w: true, wn: 1 },
    { state: ProgressState.Probe, m: 0, n: 10, rejected: 9, last: 2, w: true, wn: 3 },
    { state: ProgressState.Probe, m: 0, n: 10, rejected: 9, last: 0, w: true, wn: 1 },
  ];
  for (const [i, c] of cases.entries()) {
    const p = pr({ match: c.m, next: c.n, state: c.state });
    assert.equal(p.maybeDecrTo(c.rejected, c.last), c.w, `#${i}`);
    assert.equal(p.match, c.m, `#${i} match`);
    assert.equal(p.next, c.wn, `#${i} next`);
  }
});
