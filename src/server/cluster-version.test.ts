import assert from "node:assert/strict";
import { test } from "node:test";
import { ClusterVersionMonitor, decideClusterVersion, versionToRecord } from "./cluster-version.ts";
import { silentLogger } from "./logger.ts";
import { Membership, type Member } from "./membership.ts";

test("the decided version is the lowest major.minor, unknown while a member is", () => {
  assert.equal(decideClusterVersion(["3.4.23"]), "3.4.0");
  assert.equal(decideClusterVersion(["3.4.23", "3.3.9", "3.10.0"]), "3.3.0");
  assert.equal(decideClusterVersion(["3.4.23", undefined]), undefined);
  assert.equal(decideClusterVersion([]), undefined);
});

test("a first version is recorded even when undecided (etcd's minimum); a recorded one only rises", () => {
  assert.equal(versionToRecord(undefined, "3.4.0"), "3.4.0");
  assert.equal(versionToRecord(undefined, undefined), "3.0.0");
  assert.equal(versionToRecord("3.0.0", "3.4.0"), "3.4.0");
  assert.equal(versionToRecord("3.0.0", undefined), undefined);
  assert.equal(versionToRecord("3.4.0", "3.4.0"), undefined);
  assert.equal(versionToRecord("3.4.0", "3.3.0"), undefined);
});

const member = (id: number): Member => ({ id, name: `m${id}`, peerUrls: [`http://127.0.0.1:${2000 + id}`], clientUrls: [] });

function monitor(opts: { leader?: () => boolean; up: Set<number> }) {
  const membership = new Membership(1, [member(1), member(2), member(3)]);
  const recorded: string[] = [];
  const asked: number[] = [];
  const m = new ClusterVersionMonitor({
    memberId: 1,
    log: silentLogger,
    isLeader: opts.leader ?? (() => true),
    membership: () => membership,
    versionOf: async (peer) => {
      asked.push(peer.id);
      return opts.up.has(peer.id) ? "3.4.23" : undefined;
    },
    record: async (v) => {
      recorded.push(v);
      membership.setVersion(v); // as apply does, once the entry is committed
    },
  });
  return { m, membership, recorded, asked };
}

test("the leader records 3.0.0 while a member is late, 3.4.0 once all answer, then stops asking", async () => {
  const up = new Set([2]);
  const { m, membership, recorded, asked } = monitor({ up });
  await m.check();
  assert.deepEqual(recorded, ["3.0.0"]);
  assert.deepEqual(asked.sort(), [2, 3], "the leader does not ask itself");
  await m.check();
  assert.deepEqual(recorded, ["3.0.0"], "nothing new while member 3 is still late");
  up.add(3);
  await m.check();
  assert.deepEqual(recorded, ["3.0.0", "3.4.0"]);
  assert.equal(membership.version, "3.4.0");
  asked.length = 0;
  await m.check();
  assert.deepEqual(asked, [], "a recorded 3.4.0 cannot rise: no member asked");
});

test("all members up at the first commit: 3.4.0 at once; a follower and concurrent checks record nothing twice", async () => {
  let leader = false;
  const { m, recorded } = monitor({ leader: () => leader, up: new Set([2, 3]) });
  await m.check();
  assert.deepEqual(recorded, []);
  leader = true;
  await Promise.all([m.check(), m.check()]);
  assert.deepEqual(recorded, ["3.4.0"]);
});
