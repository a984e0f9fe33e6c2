// grpc-timeout against real members, kvctl and etcd 3.4 side by side: a member of a
// two-member cluster whose peer is gone has no leader, so a Put waits for one and a
// linearizable Range for a ReadIndex; both end at the client's deadline with what etcd
// answers (code 2 "context deadline exceeded"), not at the member's request timeout (7 s).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { errorLine, etcdctl, grpcUnary, installed, startGrpcCluster, type GrpcTestCluster, type GrpcTestMember } from "../helpers/grpc.ts";
import { until } from "../helpers/http.ts";
import { until as untilShared } from "../../src/until.test-helper.ts";

/** Members a and b; once both answered, b is stopped: a is left without a leader. */
async function leaderless(kind: "etcd" | "kvctl"): Promise<GrpcTestCluster & { endpoint: string }> {
  const c = await startGrpcCluster(kind, 2);
  const [a, b] = c.members as [GrpcTestMember, GrpcTestMember];
  await untilShared(async () => (await etcdctl(a.endpoint, ["put", "k", "v"], { timeoutMs: 3000 })).code === 0, `${kind} cluster to take a put`, 30_000, { intervalMs: 200, detail: () => a.proc.log() });
  await b.proc.stop();
  const hasNoLeader = async (): Promise<boolean> => /^etcd_server_has_leader 0$/m.test(await (await fetch(`${a.url}/metrics`)).text());
  await until(hasNoLeader, 10_000, `${kind} member a to see its leader go`);
  return { ...c, endpoint: a.endpoint };
}

/** A raw unary call with a grpc-timeout: the status and how long it took. */
function rawCall(endpoint: string, path: string, message: number[], timeout: string): Promise<{ status: string; message: string; ms: number }> {
  return grpcUnary(endpoint, path, message, { "grpc-timeout": timeout });
}

const kinds = installed("etcd") ? (["kvctl", "etcd"] as const) : (["kvctl"] as const);

for (const kind of kinds) {
  describe(`grpc-timeout on a member without a leader (${kind})`, { skip: !installed("etcdctl") && "etcdctl missing" }, () => {
    let m: GrpcTestCluster & { endpoint: string };
    before(async () => {
      m = await leaderless(kind);
    });
    after(async () => {
      await m?.stop();
    });

    test("etcdctl --command-timeout=300ms put: context deadline exceeded at the deadline", async () => {
      const t0 = performance.now();
      const r = await etcdctl(m.endpoint, ["--command-timeout=300ms", "put", "k", "v2"], { timeoutMs: 5000 });
      assert.equal(r.code, 1);
      // The client's own deadline and the server's status race (both at 300 ms): etcdctl
      // prints "context deadline exceeded" with or without "rpc error: code = Unknown".
      assert.match(errorLine(r.stderr), /^Error: (rpc error: code = Unknown desc = )?context deadline exceeded$/);
      assert.ok(performance.now() - t0 < 2500);
    });

    test("Put and linearizable Range with grpc-timeout 200m: code 2 'context deadline exceeded' at ~200 ms", async () => {
      const put = await rawCall(m.endpoint, "/etcdserverpb.KV/Put", [0x0a, 1, 0x6b, 0x12, 1, 0x76], "200m");
      const range = await rawCall(m.endpoint, "/etcdserverpb.KV/Range", [0x0a, 1, 0x6b], "200m");
      for (const r of [put, range]) {
        assert.deepEqual([r.status, r.message], ["2", "context deadline exceeded"]);
        assert.ok(r.ms >= 190 && r.ms < 1500, `${r.ms} ms`);
      }
      // A serializable Range waits for nothing: answered.
      const serializable = await rawCall(m.endpoint, "/etcdserverpb.KV/Range", [0x0a, 1, 0x6b, 0x38, 1], "200m");
      assert.equal(serializable.status, "0");
    });
  });
}
