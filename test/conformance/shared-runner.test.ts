// Conformance against answers recorded from etcd 3.4.23: replays the shared scenario corpus
// (../shared/conformance) against fresh `kvctl serve` processes, once on plain HTTP and
// once with the client port on HTTPS (tls-front.ts: the runner's requests travel inside
// TLS connections). The only scenario allowed to differ is the one REFERENCE.md lists as
// a deliberate difference.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { spawn } from "node:child_process";

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

const tlsServer = `node --import tsx ${join(root, "test/conformance/tls-front.ts")} {port} {peerPort} {dir} {name}`;

interface ReportRow {
  id: string;
  skipped?: boolean;
  error?: string;
  diffs: Array<{ path: string; expected: string; actual: string }>;
}

for (const [transport, server] of [["HTTP", plainServer], ["HTTPS", tlsServer]] as const) {
  test(`kvctl answers the etcd-recorded scenarios of ${areas} like etcd, over ${transport}`, { skip: !existsSync(runner) && "../shared/conformance is not beside the project" }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "kvctl-conf-"));
    const report = join(dir, "report.json");
    try {
      const out: string[] = [];
      const code = await new Promise<number>((resolveExit) => {
        const child = spawn(process.execPath, [runner, "check", "--only", areas, "--server", server, "--report", report], { stdio: ["ignore", "pipe", "pipe"] });
        child.stdout.on("data", (c: Buffer) => out.push(c.toString()));
        child.stderr.on("data", (c: Buffer) => out.push(c.toString()));
        child.on("exit", (c) => resolveExit(c ?? 1));
      });
      assert.ok(existsSync(report), `runner wrote no report (exit ${code}):\n${out.join("")}`);
      const rows = JSON.parse(readFileSync(report, "utf8")) as ReportRow[];
      const failed = rows.filter((r) => !r.skipped && (r.error || r.diffs.length > 0));
      const unexpected = failed.filter((r) => !deliberate.has(r.id));
      const summary = unexpected.map((r) => `${r.id}: ${r.error ?? r.diffs.slice(0, 3).map((d) => `${d.path}: expected ${d.expected}, got ${d.actual}`).join("; ")}`);
      assert.deepEqual(summary, [], `conformance failures:\n${summary.join("\n")}`);
      assert.ok(rows.filter((r) => !r.skipped).length >= 40, "too few scenarios ran");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
