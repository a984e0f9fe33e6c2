// Servers and etcdctl for the gRPC tests (test/integration/grpc-*.test.ts): the real etcd
// 3.4 and `kvctl serve` started side by side on ports of the v3 range (etcd.ts), driven
// by `ETCDCTL_API=3 etcdctl` over gRPC. kvctl runs as etcd.ts's kvctlCommand() says
// (bin/kvctl, or the sources with KVCTL_TEST_FROM_SOURCE=1).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kvctlCommand, rangePort } from "./etcd.ts";
import { repoRoot } from "./server.ts";
import { runProcess, type ProcessResult } from "./run-process.ts";
import { singleMemberFlags, spawnServer } from "./spawned.ts";

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

/** Waits until `etcdctl endpoint health` succeeds against the server (20 s). */
export async function waitGrpcReady(s: GrpcTestServer, global: readonly string[] = []): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await etcdctl(s.endpoint, [...global, "get", "ready-probe"], { timeoutMs: 3000 });
    if (r.code === 0) return;
    if (Date.now() > deadline) throw new Error(`${s.kind} not ready over gRPC: ${r.stderr}\n${s.logs()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
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
