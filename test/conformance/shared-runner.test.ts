// Conformance against answers recorded from etcd 3.4.23: replays the shared scenario corpus
// (../shared/conformance) against fresh `kvctl serve` processes, once on plain HTTP and
// once with the client port on HTTPS (tls-front.ts: the runner's requests travel inside
// TLS connections). The only scenario allowed to differ is the one REFERENCE.md lists as
// a deliberate difference. The two replays run at the same time, each on its own ports
// (runner --port: 23780-23783 and 23784-23787): most of a replay is waiting (servers
// starting, watches, TTLs), so together they take little more than the slower one.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawn } from "node:child_process";
import { CertDir } from "../helpers/certs.ts";

const root = resolve(import.meta.dirname, "../..");
const runner = resolve(root, "../shared/conformance/run.mjs");
const areas = process.env["KVCTL_CONFORMANCE_AREAS"] ?? "v2keys,watch,stats,auth,v3";

/** Scenarios kvctl answers differently on purpose (REFERENCE.md, first table). */
const deliberate = new Set(["v2keys/paths:request-line-over-4096-bytes"]);

const plainServer = [
  `node ${join(root, "bin/kvctl")} serve --name {name} --data-dir {dir}`,
  "--listen-client-urls http://127.0.0.1:{port} --advertise-client-urls http://127.0.0.1:{port}",
  "--listen-peer-urls http://127.0.0.1:{peerPort} --initial-advertise-peer-urls http://127.0.0.1:{peerPort}",
  "--initial-cluster {name}=http://127.0.0.1:{peerPort} --log-level warn",
].join(" ");

/** The server certificate of every HTTPS replay's members, made once (the runner starts 24 members). */
function tlsServer(): string {
  const certs = new CertDir("kvctl-conf-tls-");
  after(() => certs.remove());
  const server = certs.server("server", ["127.0.0.1"]);
  return `node --import tsx ${join(root, "test/conformance/tls-front.ts")} {port} {peerPort} {dir} {name} ${certs.ca.cert} ${server.cert} ${server.key}`;
}

interface ReportRow {
  id: string;
  skipped?: boolean;
  error?: string;
  diffs: Array<{ path: string; expected: string; actual: string }>;
}

/** One replay of the corpus by the runner: its report's rows, or why there is none. */
async function replay(server: string, port: number): Promise<ReportRow[]> {
  const dir = mkdtempSync(join(tmpdir(), "kvctl-conf-"));
  const report = join(dir, "report.json");
  try {
    const out: string[] = [];
    const code = await new Promise<number>((resolveExit) => {
      const child = spawn(process.execPath, [runner, "check", "--only", areas, "--server", server, "--port", String(port), "--report", report], { stdio: ["ignore", "pipe", "pipe"] });
      child.stdout.on("data", (c: Buffer) => out.push(c.toString()));
      child.stderr.on("data", (c: Buffer) => out.push(c.toString()));
      child.on("exit", (c) => resolveExit(c ?? 1));
    });
    assert.ok(existsSync(report), `runner wrote no report (exit ${code}):\n${out.join("")}`);
    return JSON.parse(readFileSync(report, "utf8")) as ReportRow[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const missing = !existsSync(runner) && "../shared/conformance is not beside the project";
// Both started now; each test waits for its own. A rejection is observed by its test.
const replays = missing
  ? undefined
  : { HTTP: replay(plainServer, 23780), HTTPS: replay(tlsServer(), 23784) };
for (const p of Object.values(replays ?? {})) p.catch(() => undefined);

for (const transport of ["HTTP", "HTTPS"] as const) {
  test(`kvctl answers the etcd-recorded scenarios of ${areas} like etcd, over ${transport}`, { skip: missing }, async () => {
    const rows = await replays![transport];
    const failed = rows.filter((r) => !r.skipped && (r.error || r.diffs.length > 0));
    const unexpected = failed.filter((r) => !deliberate.has(r.id));
    const summary = unexpected.map((r) => `${r.id}: ${r.error ?? r.diffs.slice(0, 3).map((d) => `${d.path}: expected ${d.expected}, got ${d.actual}`).join("; ")}`);
    assert.deepEqual(summary, [], `conformance failures:\n${summary.join("\n")}`);
    assert.ok(rows.filter((r) => !r.skipped).length >= 40, "too few scenarios ran");
  });
}
