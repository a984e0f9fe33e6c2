// etcdctl endpoint hashkv against kvctl: the members of a 3-member cluster agree after
// writes and after a compaction, at revision 0 and at a past revision; a compacted and a
// future revision fail with etcd 3.4's messages (recorded from etcd 3.4.23:
// "Failed to get the hash of endpoint <ep> (etcdserver: mvcc: required revision has been
// compacted)" and "... is a future revision)", exit 1; compact_revision -1 before any).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { startCluster, type TestCluster } from "../helpers/cluster.ts";
import { etcdctl, installed } from "../helpers/grpc.ts";
import { eventually } from "../../src/until.test-helper.ts";

let cluster: TestCluster | undefined;
after(async () => {
  await cluster?.stop();
});

interface HashKv {
  Endpoint: string;
  HashKV: { header: { revision: number }; hash: number; compact_revision?: number };
}

test("endpoint hashkv: three members agree; revisions past, compacted and future as etcd", { skip: !installed("etcdctl"), timeout: 120_000 }, async () => {
  cluster = await startCluster(3);
  const eps = cluster.members.map((m) => m.clientUrl.replace("http://", ""));
  const all = eps.join(",");
  for (let i = 0; i < 20; i++) {
    const r = await etcdctl(eps[i % 3]!, i % 6 === 5 ? ["del", `k${i % 4}`] : ["put", `k${i % 4}`, `v${i}`]);
    assert.equal(r.code, 0, r.stderr);
  }
  const hashes = async (extra: string[] = []): Promise<HashKv[]> => {
    // A follower applies a moment after the leader answers: ask until all are at one revision.
    let seen = "";
    return await eventually(
      async () => {
        const r = await etcdctl(all, ["endpoint", "hashkv", "-w", "json", ...extra]);
        assert.equal(r.code, 0, r.stderr);
        const out = JSON.parse(r.stdout) as HashKv[];
        seen = r.stdout;
        return new Set(out.map((h) => h.HashKV.header.revision)).size === 1 ? out : undefined;
      },
      `the three members' hashkv ${extra.join(" ")} at one revision`,
      10_000,
      { intervalMs: 100, detail: () => `last answer: ${seen}` },
    );
  };
  const now = await hashes();
  assert.equal(now.length, 3);
  assert.equal(new Set(now.map((h) => h.HashKV.hash)).size, 1, JSON.stringify(now));
  assert.deepEqual(now.map((h) => h.HashKV.compact_revision), [-1, -1, -1]);
  const rev = now[0]!.HashKV.header.revision;

  const past = await hashes(["--rev", String(rev - 5)]);
  assert.equal(new Set(past.map((h) => h.HashKV.hash)).size, 1);
  assert.notEqual(past[0]!.HashKV.hash, now[0]!.HashKV.hash);

  assert.equal((await etcdctl(eps[0]!, ["compaction", String(rev - 10)])).code, 0);
  await etcdctl(eps[1]!, ["put", "after", "compaction"]);
  const compacted = await hashes();
  assert.equal(new Set(compacted.map((h) => h.HashKV.hash)).size, 1, JSON.stringify(compacted));
  assert.deepEqual(compacted.map((h) => h.HashKV.compact_revision), [rev - 10, rev - 10, rev - 10]);

  const old = await etcdctl(eps[0]!, ["endpoint", "hashkv", "--rev", String(rev - 10)]);
  assert.equal(old.code, 1);
  assert.match(old.stderr, new RegExp(`Failed to get the hash of endpoint ${eps[0]!.replace(/\./g, "\\.")} \\(etcdserver: mvcc: required revision has been compacted\\)`));
  const future = await etcdctl(eps[0]!, ["endpoint", "hashkv", "--rev", String(rev + 100)]);
  assert.equal(future.code, 1);
  assert.match(future.stderr, /\(etcdserver: mvcc: required revision is a future revision\)/);
  assert.match(future.stderr, /code = OutOfRange/);
});
