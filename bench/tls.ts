// v2 GET and PUT over HTTPS vs plain HTTP, kvctl and etcd side by side. Each
// server runs one member listening on BOTH an http and an https client URL, so the same
// process (same data, same warm state) is measured on both; wrk drives keep-alive
// connections (the TLS handshake is paid once per connection, as with real clients).
//
//   npm run bench:tls -- [--duration 8] [--connections 16] [--etcd-bin /usr/bin/etcd]
//
// Prints a table (req/s, p50, p99 per row) and the HTTPS/HTTP ratio per server. Ports:
// 24700-24709. Certificates are generated at run time (RSA 2048, IP SAN 127.0.0.1).
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { issueCertificate } from "../src/server/tls/issue-cert.ts";
import { parseWrkOutput, runWrkRaw, type WrkSummary } from "./lib/wrk.ts";
import { VALUE64 } from "./lib/http.ts";

const { values } = parseArgs({
  options: { duration: { type: "string", default: "8" }, connections: { type: "string", default: "16" }, "etcd-bin": { type: "string", default: "/usr/bin/etcd" } },
});
const durationS = Number(values.duration);
const connections = Number(values.connections);
const root = mkdtempSync(join(tmpdir(), "kvctl-bench-tls-"));
const repo = fileURLToPath(new URL("..", import.meta.url));

const ca = issueCertificate({ commonName: "bench CA", isCa: true });
const leaf = issueCertificate({ commonName: "bench", hosts: ["127.0.0.1"], extKeyUsage: ["serverAuth"], issuer: ca });
const certFile = join(root, "server.pem");
const keyFile = join(root, "server-key.pem");
writeFileSync(certFile, leaf.certPem);
writeFileSync(keyFile, leaf.keyPem, { mode: 0o600 });

interface Server {
  name: "kvctl" | "etcd";
  http: string;
  https: string;
  proc: ChildProcess;
}

async function start(name: Server["name"], base: number): Promise<Server> {
  const http = `http://127.0.0.1:${base}`;
  const https = `https://127.0.0.1:${base + 1}`;
  const peer = `http://127.0.0.1:${base + 2}`;
  const flags = [
    "--name", "b", "--data-dir", join(root, name),
    "--listen-client-urls", `${http},${https}`, "--advertise-client-urls", http,
    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", `b=${peer}`,
    "--cert-file", certFile, "--key-file", keyFile,
  ];
  const proc =
    name === "etcd"
      ? spawn(values["etcd-bin"]!, [...flags, "--enable-v2=true", "--log-level", "error"], { stdio: "ignore" })
      : spawn(process.execPath, [join(repo, "dist/bundle/cli/main.js"), "serve", ...flags, "--log-level", "error"], { stdio: "ignore" });
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const r = await fetch(`${http}/health`);
      if (r.status === 200) break;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${name} did not become healthy`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await fetch(`${http}/v2/keys/bench-get/k`, { method: "PUT", body: new URLSearchParams({ value: VALUE64 }) });
  return { name, http, https, proc };
}

interface Row {
  server: string;
  scheme: string;
  workload: string;
  s: WrkSummary | null;
}

const rows: Row[] = [];
const servers = [await start("etcd", 24700), await start("kvctl", 24704)];
try {
  for (const workload of ["v2-get", "v2-put-unique"]) {
    for (const scheme of ["http", "https"] as const) {
      for (const srv of servers) {
        const url = scheme === "http" ? srv.http : srv.https;
        await runWrkRaw({ script: `${workload}.lua`, url, connections, durationS: 2, prefix: `warm-${scheme}` });
        const r = await runWrkRaw({ script: `${workload}.lua`, url, connections, durationS, prefix: `tls-${scheme}-${Date.now()}` });
        const s = parseWrkOutput(r.output);
        rows.push({ server: srv.name, scheme, workload, s });
        process.stderr.write(`${srv.name} ${scheme} ${workload}: ${s ? `${s.rps.toFixed(0)} req/s p50 ${s.p50_ms.toFixed(2)} ms p99 ${s.p99_ms.toFixed(2)} ms` : "wrk failed"}\n`);
      }
    }
  }
} finally {
  for (const s of servers) s.proc.kill("SIGKILL");
  await new Promise((r) => setTimeout(r, 200));
  rmSync(root, { recursive: true, force: true });
}

const get = (server: string, scheme: string, workload: string): WrkSummary | null =>
  rows.find((r) => r.server === server && r.scheme === scheme && r.workload === workload)?.s ?? null;
const fmt = (s: WrkSummary | null): string => (s ? `${s.rps.toFixed(0)} | ${s.p50_ms.toFixed(2)} | ${s.p99_ms.toFixed(2)}` : "- | - | -");
const ratio = (a: WrkSummary | null, b: WrkSummary | null): string => (a && b && b.rps > 0 ? (a.rps / b.rps).toFixed(2) : "-");
console.log(`\nv2 over HTTP and HTTPS, one member, c=${connections}, ${durationS} s per row (keep-alive connections)\n`);
console.log("| workload | scheme | etcd req/s | p50 ms | p99 ms | kvctl req/s | p50 ms | p99 ms | kvctl/etcd |");
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const workload of ["v2-get", "v2-put-unique"]) {
  for (const scheme of ["http", "https"]) {
    const e = get("etcd", scheme, workload);
    const k = get("kvctl", scheme, workload);
    console.log(`| ${workload} | ${scheme} | ${fmt(e)} | ${fmt(k)} | ${ratio(k, e)} |`);
  }
}
console.log("\n| server | GET https/http | PUT https/http |\n| --- | ---: | ---: |");
for (const server of ["etcd", "kvctl"]) {
  console.log(`| ${server} | ${ratio(get(server, "https", "v2-get"), get(server, "http", "v2-get"))} | ${ratio(get(server, "https", "v2-put-unique"), get(server, "http", "v2-put-unique"))} |`);
}
