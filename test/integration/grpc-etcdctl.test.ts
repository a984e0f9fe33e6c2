// `ETCDCTL_API=3 etcdctl` against kvctl's gRPC API (the client port, cmux), command by
// command beside the real etcd 3.4 given the same commands in the same order, so their
// revisions agree; outputs are compared after masking what differs by nature (cluster,
// member and lease IDs, ports, sizes, timings). Skipped when etcdctl is not installed;
// without etcd only kvctl's exit codes and outputs are checked.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { errorLine, etcdctl, installed, startGrpcServer, waitGrpcReady, type EtcdctlResult, type GrpcTestServer } from "../helpers/grpc.ts";

const haveEtcdctl = installed("etcdctl");
const haveEtcd = haveEtcdctl && installed("etcd");

/** Masks what legitimately differs between two servers. */
function normalize(s: string): string {
  return s
    .replace(/"(cluster_id|member_id|ID|leader|raft_term)":\d+/g, '"$1":N')
    .replace(/127\.0\.0\.1:\d+/g, "127.0.0.1:PORT")
    .replace(/\b[0-9a-f]{12,16}\b/g, "HEXID")
    .replace(/remaining\(\d+s\)/g, "remaining(Ns)")
    .replace(/took = [\d.]+[µm]?s/g, "took = T");
}

describe("etcdctl over gRPC", { skip: haveEtcdctl ? false : "etcdctl not installed (apt-get install etcd-client)" }, () => {
  let kv: GrpcTestServer;
  let ref: GrpcTestServer | undefined;
  const dir = mkdtempSync(join(tmpdir(), "kvctl-grpc-etcdctl-"));

  before(async () => {
    kv = await startGrpcServer("kvctl");
    if (haveEtcd) ref = await startGrpcServer("etcd");
    await Promise.all([waitGrpcReady(kv), ref === undefined ? undefined : waitGrpcReady(ref)]);
  });
  after(async () => {
    await Promise.all([kv?.stop(), ref?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the command on both; asserts the same exit code, stdout and error line. */
  async function same(args: string[], opts: { input?: string; global?: string[] } = {}): Promise<EtcdctlResult> {
    const full = [...(opts.global ?? []), ...args];
    const [a, b] = await Promise.all([etcdctl(kv.endpoint, full, opts), ref === undefined ? undefined : etcdctl(ref.endpoint, full, opts)]);
    if (b !== undefined) {
      assert.equal(a.code, b.code, `exit code of etcdctl ${full.join(" ")}: ${a.stderr}`);
      assert.equal(normalize(a.stdout), normalize(b.stdout), `stdout of etcdctl ${full.join(" ")}`);
      assert.equal(normalize(errorLine(a.stderr)), normalize(errorLine(b.stderr)), `error of etcdctl ${full.join(" ")}`);
    }
    return a;
  }

  test("put, get (simple and json, prefix, limit, count-only, revision), del", async () => {
    assert.equal((await same(["put", "foo", "bar"])).stdout, "OK\n");
    await same(["put", "foo2", "baz"]);
    assert.equal((await same(["put", "foo", "bar2", "--prev-kv"])).stdout, "OK\nfoo\nbar\n");
    assert.equal((await same(["get", "foo"])).stdout, "foo\nbar2\n");
    await same(["get", "foo", "-w", "json"]);
    await same(["get", "--prefix", "fo", "--limit", "1", "-w", "json"]);
    await same(["get", "--prefix", "fo", "--count-only", "-w", "json"]);
    await same(["get", "--prefix", "fo", "--keys-only", "--order", "DESCEND", "--sort-by", "MODIFY"]);
    assert.equal((await same(["get", "foo", "--rev", "2"])).stdout, "foo\nbar\n");
    await same(["get", "foo", "--rev", "99"]);
    await same(["get", "", "--from-key", "-w", "json"]);
    assert.equal((await same(["del", "foo2", "--prev-kv"])).stdout, "1\nfoo2\nbaz\n");
    await same(["del", "nothing"]);
  });

  test("txn: create if absent, guarded update and delete (kube-apiserver's shapes)", async () => {
    const create = 'create("k8s/a") = "0"\n\nput k8s/a v1\n\nget k8s/a\n\n';
    assert.match((await same(["txn"], { input: create })).stdout, /^SUCCESS\n\nOK\n/);
    await same(["txn", "-w", "json"], { input: create });
    const rev = JSON.parse((await etcdctl(kv.endpoint, ["get", "k8s/a", "-w", "json"])).stdout) as { kvs: Array<{ mod_revision: number }> };
    const modRev = rev.kvs[0]!.mod_revision;
    await same(["txn", "-w", "json"], { input: `mod("k8s/a") = "${modRev}"\n\nput k8s/a v2\n\nget k8s/a\n\n` });
    await same(["txn"], { input: `mod("k8s/a") = "${modRev}"\n\nput k8s/a v3\n\nget k8s/a\n\n` });
    await same(["txn", "-w", "json"], { input: `mod("k8s/a") = "${modRev + 1}"\n\ndel k8s/a\n\n\n` });
  });

  test("watch from a revision with prev_kv, then compaction errors", async () => {
    const watch = (s: GrpcTestServer): Promise<EtcdctlResult> => etcdctl(s.endpoint, ["watch", "--rev", "1", "--prefix", "foo", "--prev-kv"], { timeoutMs: 2500 });
    const [a, b] = await Promise.all([watch(kv), ref === undefined ? undefined : watch(ref)]);
    assert.match(a.stdout, /^PUT\nfoo\nbar\nPUT\nfoo2\nbaz\nPUT\nfoo\nbar\nfoo\nbar2\n/);
    if (b !== undefined) assert.equal(a.stdout, b.stdout);
    await same(["compaction", "3"]);
    const old = await same(["get", "foo", "--rev", "2"]);
    assert.equal(errorLine(old.stderr), "Error: etcdserver: mvcc: required revision has been compacted");
    const w = await etcdctl(kv.endpoint, ["watch", "--rev", "2", "foo"], { timeoutMs: 2500 });
    assert.match(w.stdout + w.stderr, /compacted/);
  });

  test("lease grant, attach, timetolive, keep-alive, list, revoke", async () => {
    const grant = async (s: GrpcTestServer): Promise<string> => {
      const r = await etcdctl(s.endpoint, ["lease", "grant", "60"]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^lease [0-9a-f]+ granted with TTL\(60s\)\n$/);
      return r.stdout.split(" ")[1]!;
    };
    const ids = await Promise.all([grant(kv), ref === undefined ? undefined : grant(ref)]);
    const run = async (args: (id: string) => string[]): Promise<void> => {
      const [a, b] = await Promise.all([etcdctl(kv.endpoint, args(ids[0])), ref === undefined ? undefined : etcdctl(ref.endpoint, args(ids[1]!))]);
      assert.equal(a.code, 0, a.stderr);
      if (b !== undefined) assert.equal(normalize(a.stdout), normalize(b.stdout), args("ID").join(" "));
    };
    await run((id) => ["put", "leased", "v", "--lease", id]);
    await run((id) => ["lease", "timetolive", id, "--keys"]);
    await run((id) => ["lease", "keep-alive", "--once", id]);
    await run(() => ["lease", "list"]);
    await run((id) => ["lease", "revoke", id]);
    await run((id) => ["lease", "timetolive", id]);
    await same(["get", "leased"]);
    await same(["lease", "revoke", "1234"]);
  });

  test("member list, endpoint status and health, alarm list, defrag, hashkv", async () => {
    const members = await same(["member", "list"]);
    assert.match(members.stdout, /^[0-9a-f]+, started, t, http:\/\/127\.0\.0\.1:\d+, http:\/\/127\.0\.0\.1:\d+, false\n$/);
    await same(["member", "list", "-w", "json"]);
    const status = await etcdctl(kv.endpoint, ["endpoint", "status"]);
    assert.match(status.stdout, /^127\.0\.0\.1:\d+, [0-9a-f]+, 3\.4\.23, [\d.]+ [kMG]?B, true, false, \d+, \d+, \d+, \n$/);
    const health = await etcdctl(kv.endpoint, ["endpoint", "health"]);
    assert.equal(health.code, 0);
    assert.match(health.stdout + health.stderr, /127\.0\.0\.1:\d+ is healthy: successfully committed proposal: took = /);
    assert.equal((await same(["alarm", "list"])).stdout, "");
    assert.match((await same(["defrag"])).stdout, /^Finished defragmenting etcd member\[127\.0\.0\.1:\d+\]\n$/);
    const hash = await etcdctl(kv.endpoint, ["endpoint", "hashkv"]);
    assert.match(hash.stdout, /^127\.0\.0\.1:\d+, \d+\n$/);
  });

  test("snapshot save", async () => {
    const file = join(dir, "snap.db");
    const r = await etcdctl(kv.endpoint, ["snapshot", "save", file]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Snapshot saved at /);
    // etcd's database is whole pages; etcdctl appends the 32-byte sha256 it checked.
    assert.equal((statSync(file).size - 32) % 512, 0);
  });

  test("auth: users, roles, permissions, enable, token, denial, disable", async () => {
    assert.equal((await same(["user", "add", "root:rootpw"])).stdout, "User root created\n");
    await same(["role", "add", "r1"]);
    await same(["role", "grant-permission", "r1", "readwrite", "a1", "a9"]);
    await same(["user", "add", "alice:apw"]);
    await same(["user", "grant-role", "alice", "r1"]);
    assert.equal((await same(["auth", "enable"])).stdout, "Authentication Enabled\n");
    assert.equal(errorLine((await same(["put", "a2", "v"])).stderr), "Error: etcdserver: user name is empty");
    assert.equal((await same(["put", "a2", "v"], { global: ["--user", "alice:apw"] })).stdout, "OK\n");
    await same(["get", "a2"], { global: ["--user", "alice:apw"] });
    assert.equal(errorLine((await same(["put", "zz", "v"], { global: ["--user", "alice:apw"] })).stderr), "Error: etcdserver: permission denied");
    assert.equal(errorLine((await same(["get", "a2"], { global: ["--user", "alice:wrong"] })).stderr), "Error: etcdserver: authentication failed, invalid user ID or password");
    await same(["role", "get", "r1"], { global: ["--user", "root:rootpw"] });
    await same(["user", "list"], { global: ["--user", "root:rootpw"] });
    await same(["user", "get", "alice"], { global: ["--user", "root:rootpw"] });
    await same(["role", "list"], { global: ["--user", "root:rootpw"] });
    await same(["user", "revoke-role", "alice", "r1"], { global: ["--user", "root:rootpw"] });
    await same(["role", "revoke-permission", "r1", "a1", "a9"], { global: ["--user", "root:rootpw"] });
    await same(["auth", "disable"], { global: ["--user", "root:rootpw"] });
    await same(["get", "a2"]);
  });
});
