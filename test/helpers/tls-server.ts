// A `kvctl serve` (or etcd, KVCTL_TEST_SERVER=etcd) on an https:// client URL, and raw TLS
// probes for handshake-level assertions (alert names arrive as Node error codes such as
// ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE). Ports come from KVCTL_TEST_PORTS ("lo-hi",
// default 23350-23399, the range reserved for these tests). Health is polled over TLS
// with the given client credentials (20 s deadline). Register `after(() => s.stop())`.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type ConnectionOptions } from "node:tls";
import { kvctlBin, repoRoot } from "./server.ts";
import { stopProcess } from "./run-process.ts";
import { portIn, portRange } from "./ports.ts";
import { until } from "../../src/until.test-helper.ts";

/** A port of the reserved range that is free now (probed by binding it). */
export function reservedPort(): Promise<number> {
  return portIn(portRange("KVCTL_TEST_PORTS", [23350, 23399])!);
}

export interface ClientTls {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
  ciphers?: string;
  maxVersion?: "TLSv1.2" | "TLSv1.3";
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request over https (or http); rejects on TLS and socket errors. */
export function request(url: string, opts: { method?: string; path?: string; headers?: Record<string, string>; body?: string; tls?: ClientTls } = {}): Promise<Reply> {
  const u = new URL(url);
  const send = u.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      {
        hostname: u.hostname.replace(/^\[|\]$/g, ""),
        port: u.port,
        method: opts.method ?? "GET",
        path: opts.path ?? "/health",
        headers: opts.headers ?? {},
        agent: false,
        timeout: 5000,
        ...(u.protocol === "https:" ? { ...opts.tls } : {}),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.end(opts.body);
  });
}

export type Handshake = { ok: true; protocol: string; cipher: string } | { ok: false; code: string; message: string };

/**
 * Connects, sends `GET /health`, and reports how it went: a response means the server
 * accepted the connection; an error carries the alert. In TLS 1.3 the client's handshake
 * completes before the server judges its certificate, so the alert comes on the first read.
 */
export function probe(port: number, tls: ClientTls): Promise<Handshake> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port, ...(tls as ConnectionOptions) });
    let done = false;
    const finish = (h: Handshake): void => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(h);
    };
    socket.setTimeout(5000, () => finish({ ok: false, code: "TIMEOUT", message: "no answer in 5 s" }));
    socket.on("secureConnect", () => socket.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
    socket.on("data", () => finish({ ok: true, protocol: socket.getProtocol() ?? "", cipher: socket.getCipher().standardName }));
    socket.on("error", (err: NodeJS.ErrnoException) => finish({ ok: false, code: err.code ?? "", message: err.message }));
    socket.on("close", () => finish({ ok: false, code: "CLOSED", message: "closed without an answer" }));
  });
}

export interface TlsServerOptions {
  /** Flags after the generated name/data-dir/URL flags (certificates, auth, …). */
  flags: string[];
  scheme?: "https" | "http";
  /** Credentials for the health check. */
  health?: ClientTls;
  env?: Record<string, string>;
}

export interface TlsTestServer {
  url: string;
  port: number;
  dataDir: string;
  pid: number;
  logs(): string;
  /** SIGTERM, then starts again on the same ports and data directory. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const stopChild = (child: ChildProcess): Promise<void> => stopProcess(child);

export async function startTlsServer(opts: TlsServerOptions): Promise<TlsTestServer> {
  const scheme = opts.scheme ?? "https";
  const port = await reservedPort();
  const peerPort = await reservedPort();
  const url = `${scheme}://127.0.0.1:${port}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const dataDir = mkdtempSync(join(tmpdir(), "kvctl-tls-"));
  const flags = [
    "--name", "tls",
    "--data-dir", dataDir,
    "--listen-client-urls", url,
    "--advertise-client-urls", url,
    "--listen-peer-urls", peerUrl,
    "--initial-advertise-peer-urls", peerUrl,
    "--initial-cluster", `tls=${peerUrl}`,
    ...opts.flags,
  ];
  let out = "";
  const etcd = process.env["KVCTL_TEST_SERVER"] === "etcd";
  const launch = async (): Promise<ChildProcess> => {
    const child = etcd
      ? spawn("etcd", ["--enable-v2=true", ...flags], { cwd: repoRoot, env: { ...process.env, ...opts.env }, stdio: ["ignore", "pipe", "pipe"] })
      : spawn(process.execPath, [kvctlBin, "serve", ...flags], { cwd: repoRoot, env: { ...process.env, ...opts.env }, stdio: ["ignore", "pipe", "pipe"] });
    const keep = (c: Buffer): void => {
      out = (out + c.toString("utf8")).slice(-20_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    const up = async (): Promise<boolean> => {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${out}`);
      try {
        return (await request(url, { tls: opts.health ?? {} })).status === 200;
      } catch {
        return false; // not up yet
      }
    };
    try {
      await until(up, "the server healthy", 20_000, { intervalMs: 50, detail: () => out });
    } catch (err) {
      await stopChild(child);
      throw err;
    }
    return child;
  };
  let child: ChildProcess;
  try {
    child = await launch();
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const server: TlsTestServer = {
    url,
    port,
    dataDir,
    pid: child.pid ?? 0,
    logs: () => out,
    async restart() {
      await stopChild(child);
      child = await launch();
      server.pid = child.pid ?? 0;
    },
    async stop() {
      await stopChild(child);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return server;
}

/** Runs `kvctl serve` with `flags` and expects it to exit: its exit code and output. */
export function serveExpectingExit(flags: readonly string[], timeoutMs = 15_000): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [kvctlBin, "serve", ...flags], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString("utf8")));
    child.stderr.on("data", (c: Buffer) => (output += c.toString("utf8")));
    child.on("close", (code) => resolve({ code, output }));
  });
}
