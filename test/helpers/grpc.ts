// Servers and etcdctl for the gRPC tests (test/integration/grpc-*.test.ts): the real etcd
// 3.4 and `kvctl serve` started side by side on ports of the v3 range (etcd.ts), driven
// by `ETCDCTL_API=3 etcdctl` over gRPC. kvctl runs as etcd.ts's kvctlCommand() says
// (bin/kvctl, or the sources with KVCTL_TEST_FROM_SOURCE=1).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kvctlCommand, rangePort } from "./etcd.ts";
import { repoRoot } from "./server.ts";
import { runProcess, type ProcessResult } from "./run-process.ts";
import { singleMemberFlags, spawnServer, type Spawned } from "./spawned.ts";
import { until } from "../../src/until.test-helper.ts";

export interface GrpcTestServer {
  kind: "etcd" | "kvctl";
  /** host:port, as etcdctl's --endpoints takes it (a URL for https) */
  endpoint: string;
  url: string;
  stop(): Promise<void>;
  logs(): string;
}

/** Whether etcdctl (`etcdctl version`) or etcd (`etcd --version`) runs here. */
export function installed(program: "etcd" | "etcdctl"): boolean {
  const r = spawnSync(program, [program === "etcd" ? "--version" : "version"], { encoding: "utf8", env: { ...process.env, ETCDCTL_API: "3" } });
  return r.error === undefined && r.status === 0;
}

export async function startGrpcServer(kind: "etcd" | "kvctl", extraFlags: readonly string[] = [], scheme: "http" | "https" = "http"): Promise<GrpcTestServer> {
  const client = await rangePort();
  const peer = await rangePort();
  const url = `${scheme}://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const dataDir = mkdtempSync(join(tmpdir(), "kvctl-grpc-"));
  const flags = [...singleMemberFlags(dataDir, url, peerUrl), ...extraFlags];
  const [file, args] = kind === "etcd" ? ["etcd", flags] : [process.execPath, [...kvctlCommand(), "serve", ...flags]];
  const proc = spawnServer(file, args, repoRoot);
  const stop = async (): Promise<void> => {
    await proc.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const endpoint = `127.0.0.1:${client}`;
  const server: GrpcTestServer = { kind, endpoint, url, stop, logs: proc.log };
  return server;
}

export interface GrpcTestMember {
  name: string;
  /** host:port of its client URL */
  endpoint: string;
  url: string;
  proc: Spawned;
}

export interface GrpcTestCluster {
  kind: "etcd" | "kvctl";
  members: GrpcTestMember[];
  stop(): Promise<void>;
}

/** `n` members (a, b, c, ...) of one new cluster, started at once on ports of the v3 range; not waited for. */
export async function startGrpcCluster(kind: "etcd" | "kvctl", n: number, extraFlags: readonly string[] = []): Promise<GrpcTestCluster> {
  const names = Array.from({ length: n }, (_, i) => String.fromCharCode(97 + i));
  const ports: Array<{ client: number; peer: number }> = [];
  for (let i = 0; i < n; i++) ports.push({ client: await rangePort(), peer: await rangePort() });
  const dirs = names.map(() => mkdtempSync(join(tmpdir(), "kvctl-grpc-cluster-")));
  const peer = (i: number): string => `http://127.0.0.1:${ports[i]!.peer}`;
  const cluster = names.map((name, i) => `${name}=${peer(i)}`).join(",");
  const members = names.map((name, i): GrpcTestMember => {
    const url = `http://127.0.0.1:${ports[i]!.client}`;
    const flags = ["--name", name, "--data-dir", dirs[i]!, "--listen-client-urls", url, "--advertise-client-urls", url,
      "--listen-peer-urls", peer(i), "--initial-advertise-peer-urls", peer(i), "--initial-cluster", cluster, ...extraFlags];
    const proc = kind === "etcd" ? spawnServer("etcd", flags, repoRoot) : spawnServer(process.execPath, [...kvctlCommand(), "serve", ...flags], repoRoot);
    return { name, endpoint: `127.0.0.1:${ports[i]!.client}`, url, proc };
  });
  return {
    kind,
    members,
    stop: async () => {
      await Promise.all(members.map((m) => m.proc.stop()));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}

/** One unary call made by hand (`message`: the request's protobuf bytes): its status and how long it took. */
export function grpcUnary(endpoint: string, path: string, message: number[], headers: http2.OutgoingHttpHeaders = {}): Promise<{ status: string; message: string; ms: number }> {
  const session = http2.connect(`http://${endpoint}`);
  const t0 = performance.now();
  const framed = Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), Buffer.from(message)]);
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
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

/** Waits until `etcdctl endpoint health` succeeds against the server (20 s). */
export async function waitGrpcReady(s: GrpcTestServer, global: readonly string[] = []): Promise<void> {
  let stderr = "";
  const ready = async (): Promise<boolean> => {
    const r = await etcdctl(s.endpoint, [...global, "get", "ready-probe"], { timeoutMs: 3000 });
    stderr = r.stderr;
    return r.code === 0;
  };
  await until(ready, `${s.kind} ready over gRPC`, 20_000, { intervalMs: 100, detail: () => `${stderr}\n${s.logs()}` });
}

export type EtcdctlResult = ProcessResult;

/** `ETCDCTL_API=3 etcdctl --endpoints <endpoint> <args>`. */
export function etcdctl(endpoint: string, args: readonly string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<EtcdctlResult> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("ETCDCTL_")));
  return runProcess("etcdctl", [`--endpoints=${endpoint}`, ...args], { env: { ...env, ETCDCTL_API: "3" }, ...opts });
}

/** etcdctl's error line (the last line of stderr that starts with "Error:"). */
export function errorLine(stderr: string): string {
  return stderr.split("\n").filter((l) => l.startsWith("Error:")).pop() ?? "";
}
