// grpc-timeout against real members, kvctl and etcd 3.4 side by side: a member of a
// two-member cluster whose peer is gone has no leader, so a Put waits for one and a
// linearizable Range for a ReadIndex; both end at the client's deadline with what etcd
// answers (code 2 "context deadline exceeded"), not at the member's request timeout (7 s).
import assert from "node:assert/strict";
import http2 from "node:http2";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { kvctlCommand, rangePort } from "../helpers/etcd.ts";
import { errorLine, etcdctl, installed } from "../helpers/grpc.ts";
import { repoRoot } from "../helpers/server.ts";
import { spawnServer, type Spawned } from "../helpers/spawned.ts";

interface Leaderless {
  kind: "etcd" | "kvctl";
  endpoint: string;
  stop(): Promise<void>;
}

/** Members a and b; once both answered, b is stopped: a is left without a leader. */
async function leaderless(kind: "etcd" | "kvctl"): Promise<Leaderless> {
  const ports = [await rangePort(), await rangePort(), await rangePort(), await rangePort()];
  const dirs = [mkdtempSync(join(tmpdir(), "kvctl-deadline-")), mkdtempSync(join(tmpdir(), "kvctl-deadline-"))];
  const peer = (i: number): string => `http://127.0.0.1:${ports[2 * i + 1]}`;
  const client = (i: number): string => `http://127.0.0.1:${ports[2 * i]}`;
  const cluster = `a=${peer(0)},b=${peer(1)}`;
  const procs: Spawned[] = ["a", "b"].map((name, i) => {
    const flags = ["--name", name, "--data-dir", dirs[i]!, "--listen-client-urls", client(i), "--advertise-client-urls", client(i),
      "--listen-peer-urls", peer(i), "--initial-advertise-peer-urls", peer(i), "--initial-cluster", cluster];
    return kind === "etcd" ? spawnServer("etcd", flags, repoRoot) : spawnServer(process.execPath, [...kvctlCommand(), "serve", ...flags], repoRoot);
  });
  const endpoint = `127.0.0.1:${ports[0]}`;
  const t0 = Date.now();
  while ((await etcdctl(endpoint, ["put", "k", "v"], { timeoutMs: 3000 })).code !== 0) {
    if (Date.now() - t0 > 30_000) throw new Error(`${kind} cluster did not start:\n${procs[0]!.log()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  await procs[1]!.stop();
  // Past an election timeout: a has seen its leader go.
  await new Promise((r) => setTimeout(r, 2500));
  return {
    kind,
    endpoint,
    stop: async () => {
      await Promise.all(procs.map((p) => p.stop()));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

/** A raw unary call with a grpc-timeout: the status and how long it took. */
function rawCall(endpoint: string, path: string, message: number[], timeout: string): Promise<{ status: string; message: string; ms: number }> {
  const session = http2.connect(`http://${endpoint}`);
  const t0 = performance.now();
  const framed = Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), Buffer.from(message)]);
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", "grpc-timeout": timeout });
    let status: http2.IncomingHttpHeaders | undefined;
    req.on("response", (h) => {
      if (h["grpc-status"] !== undefined) status = h;
    });
    req.on("trailers", (t) => (status = t));
    req.on("error", reject);
    req.resume();
    req.on("close", () => {
      session.close();
      resolve({ status: String(status?.["grpc-status"]), message: String(status?.["grpc-message"]), ms: performance.now() - t0 });
    });
    req.end(framed);
  });
}

const kinds = installed("etcd") ? (["kvctl", "etcd"] as const) : (["kvctl"] as const);

for (const kind of kinds) {
  describe(`grpc-timeout on a member without a leader (${kind})`, { skip: !installed("etcdctl") && "etcdctl missing" }, () => {
    let m: Leaderless;
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
