import assert from "node:assert/strict";
import { test } from "node:test";
import { V2Error } from "../../api/v2-errors.ts";
import type { V2Action } from "../../api/v2-types.ts";
import { EventHistory, eventConcerns } from "./event-history.ts";
import type { V2Event } from "./event.ts";

function ev(index: number, key: string, action: V2Action = "set", prevDir = false): V2Event {
  const e: V2Event = { action, node: { key, value: "v", modifiedIndex: index, createdIndex: index }, etcdIndex: index };
  if (prevDir) e.prevNode = { key, dir: true, modifiedIndex: 1, createdIndex: 1 };
  return e;
}

test("event history starts empty: indexes 0 and every scan waits", () => {
  const h = new EventHistory();
  assert.equal(h.startIndex, 0);
  assert.equal(h.lastIndex, 0);
  assert.equal(h.scan({ key: "/a", recursive: false, since: 1 }), null);
});

test("event history keeps the last 1000 events when it wraps around", () => {
  const h = new EventHistory();
  for (let i = 1; i <= 1500; i++) h.add(ev(i, `/k${i % 7}`), { refresh: false });
  assert.equal(h.size, 1000);
  assert.equal(h.startIndex, 501);
  assert.equal(h.lastIndex, 1500);
  const entries = h.entries();
  assert.equal(entries.length, 1000);
  assert.equal(entries[0]?.event.node.modifiedIndex, 501);
  assert.equal(entries[999]?.event.node.modifiedIndex, 1500);
  // the oldest retained event is still found; one before it is cleared
  assert.equal(h.scan({ key: "/k4", recursive: false, since: 501 })?.node.modifiedIndex, 501);
  assert.throws(
    () => h.scan({ key: "/k4", recursive: false, since: 500 }),
    (err: unknown) =>
      err instanceof V2Error &&
      err.errorCode === 401 &&
      err.cause_ === "the requested history has been cleared [501/500]" &&
      err.index === 0,
  );
});

test("event history scan returns the first matching event at or after since", () => {
  const h = new EventHistory();
  h.add(ev(10, "/a"), { refresh: false });
  h.add(ev(11, "/a"), { refresh: false });
  h.add(ev(12, "/other"), { refresh: false });
  h.add(ev(13, "/a"), { refresh: false });
  assert.equal(h.scan({ key: "/a", recursive: false, since: 10 })?.node.modifiedIndex, 10);
  assert.equal(h.scan({ key: "/a", recursive: false, since: 12 })?.node.modifiedIndex, 13);
  assert.equal(h.scan({ key: "/a", recursive: false, since: 14 }), null, "future index: wait");
  assert.deepEqual(
    h.scanAll({ key: "/a", recursive: false, since: 11 }).map((e) => e.node.modifiedIndex),
    [11, 13],
  );
});

test("event history scan skips refresh events", () => {
  const h = new EventHistory();
  h.add(ev(1, "/a"), { refresh: false });
  h.add(ev(2, "/a"), { refresh: true });
  h.add(ev(3, "/a"), { refresh: false });
  assert.equal(h.scan({ key: "/a", recursive: false, since: 2 })?.node.modifiedIndex, 3);
  assert.equal(h.entries()[1]?.refresh, true);
});

test("event history tolerates gaps in indexes", () => {
  const h = new EventHistory();
  for (const i of [2, 5, 9, 20]) h.add(ev(i, "/a"), { refresh: false });
  assert.equal(h.scan({ key: "/a", recursive: false, since: 6 })?.node.modifiedIndex, 9);
  assert.equal(h.scan({ key: "/a", recursive: false, since: 2 })?.node.modifiedIndex, 2);
});

const concernCases: [name: string, e: V2Event, key: string, recursive: boolean, want: boolean][] = [
  ["the exact key", ev(1, "/a/b"), "/a/b", false, true],
  ["a child, non-recursive", ev(1, "/a/b"), "/a", false, false],
  ["a child, recursive", ev(1, "/a/b"), "/a", true, true],
  ["a deep child from the root", ev(1, "/a/b/c"), "/", true, true],
  // etcd's history scan shows hidden descendants to recursive watchers (live delivery does not).
  ["a hidden child, recursive", ev(1, "/a/_h"), "/a", true, true],
  ["below a hidden dir, recursive", ev(1, "/a/_h/x"), "/a", true, true],
  ["a hidden key watched exactly", ev(1, "/a/_h"), "/a/_h", false, true],
  ["a child of a watched hidden dir", ev(1, "/_h/x"), "/_h", true, true],
  ["a sibling with a common prefix", ev(1, "/foobar"), "/foo", true, false],
  ["delete of an ancestor dir", ev(1, "/d", "delete", true), "/d/x/y", false, true],
  ["expire of an ancestor dir", ev(1, "/d", "expire", true), "/d/x", false, true],
  // etcd's history scan matches a directory's delete by string prefix.
  ["delete of a dir with a common prefix", ev(1, "/foo", "delete", true), "/foobar", false, true],
  ["set of an ancestor dir", ev(1, "/d", "set", true), "/d/x", false, false],
];
for (const [name, e, key, recursive, want] of concernCases) {
  test(`eventConcerns is ${want} for ${name}`, () => {
    assert.equal(eventConcerns(e, key, recursive), want);
  });
}

test("scan of an index below the first event is not cleared while nothing was evicted", () => {
  const h = new EventHistory(3);
  const ev = (i: number) => ({ action: "set" as const, node: { key: "/a", modifiedIndex: i, createdIndex: i }, etcdIndex: i });
  h.add(ev(5), { refresh: false });
  assert.equal(h.scan({ key: "/a", recursive: false, since: 1 })?.node.modifiedIndex, 5);
  h.add(ev(6), { refresh: false });
  h.add(ev(7), { refresh: false });
  h.add(ev(8), { refresh: false });
  assert.throws(() => h.scan({ key: "/a", recursive: false, since: 5 }), /cleared \[6\/5\]/);
});
