// docker's libkv 0.2.1 (Debian golang-github-docker-libkv-dev), whose etcd store speaks
// the v2 API through etcd's Go v2 client, against `kvctl serve`: Put/Get/Exists/Delete
// (TTLs, dirs, binary values), List/DeleteTree, AtomicPut/AtomicDelete (create, stale
// index, wrong value), Watch/WatchTree, NewLock (renewals, waiting, stop channel, expiry
// after renewals stop) and v2 auth refusals (test/clients/libkv/scenario.go); and with
// three members whose leader is killed while a watch and a tree watch run (its -pids
// mode: writes, CAS, a contended lock, the watches after it). Each step's line against
// kvctl must be etcd 3.4.23's, recorded in test/clients/libkv/expected.txt, expected-3.txt.
// Skipped, with a notice, without Go or libkv's source. The build is cached under /tmp
// (the first one takes ~10 s).
//
// To record the expected file again from etcd (installed as `etcd`):
//   KVCTL_LIBKV_RECORD=1 node --import tsx --test test/integration/clients-libkv.test.ts
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { startGrpcCluster, startGrpcServer } from "../helpers/grpc.ts";
import { runProcess } from "../helpers/run-process.ts";
import { repoRoot } from "../helpers/server.ts";
import { eventually } from "../../src/until.test-helper.ts";

const record = process.env["KVCTL_LIBKV_RECORD"] === "1";
const kind = record ? "etcd" : "kvctl";
const here = join(repoRoot, "test", "clients", "libkv");

function unavailable(): string | false {
  const go = spawnSync("go", ["version"], { encoding: "utf8" });
  const why =
    go.error !== undefined || go.status !== 0
      ? "no go (apt-get install golang-go)"
      : !existsSync("/usr/share/gocode/src/github.com/docker/libkv/store/etcd/etcd.go")
        ? "no libkv source (apt-get install golang-github-docker-libkv-dev)"
        : false;
  if (why !== false) process.stderr.write(`clients-libkv: skipped: ${why}\n`);
  return why;
}

const dir = mkdtempSync(join(tmpdir(), "kvctl-libkv-"));
const bin = join(dir, "scenario");
let built: Promise<void> | undefined;
/** Builds the scenario once for both tests. */
function build(): Promise<void> {
  built ??= runProcess(join(here, "build.sh"), [bin], { cwd: repoRoot, env: process.env, timeoutMs: 100_000 }).then((r) => assert.equal(r.code, 0, `build: ${r.stderr}`));
  return built;
}

function compare(stdout: string, name: string): void {
  const file = join(here, name);
  if (record) {
    writeFileSync(file, stdout);
    return;
  }
  // Line by line, so that a failure names the steps that differ.
  assert.deepEqual(stdout.split("\n"), readFileSync(file, "utf8").split("\n"), `libkv against kvctl differs from etcd 3.4.23 (${name})`);
}

describe(`docker's libkv 0.2.1 (etcd v2 store) against ${kind}`, { concurrency: true }, () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("one member: every step answers as etcd 3.4.23's", { skip: unavailable(), timeout: 120_000 }, async () => {
    await build();
    const s = await startGrpcServer(kind, ["--enable-v2=true"]);
    try {
      const port = s.endpoint.split(":")[1]!;
      // The scenario's first write fails while the server is not serving yet: run again
      // until a run gets past it (20 s at most).
      let lastStderr = "";
      const r = await eventually(
        async () => {
          const run = await runProcess(bin, ["-endpoint", `127.0.0.1:${port}`], { cwd: dir, env: process.env, timeoutMs: 60_000 });
          lastStderr = run.stderr;
          return run.code !== 0 && /^base:/m.test(run.stderr) ? undefined : run;
        },
        `libkv's scenario to get past its first write (the "base:" step) on ${kind}`,
        20_000,
        { intervalMs: 500, detail: () => `last run: ${lastStderr.slice(-1500)}\nserver: ${s.logs().slice(-1500)}` },
      );
      assert.equal(r.code, 0, `scenario exited ${r.code ?? r.signal}: ${r.stderr.slice(-3000)}\nserver: ${s.logs().slice(-2000)}`);
      compare(r.stdout, "expected.txt");
    } finally {
      await s.stop();
    }
  });

  test("three members, the leader killed: every step answers as etcd 3.4.23's", { skip: unavailable(), timeout: 120_000 }, async () => {
    await build();
    const c = await startGrpcCluster(kind, 3, ["--enable-v2=true"]);
    try {
      const args = ["-endpoint", c.members.map((m) => m.endpoint).join(","), "-pids", c.members.map((m) => String(m.proc.child.pid)).join(",")];
      const r = await runProcess(bin, args, { cwd: dir, env: process.env, timeoutMs: 100_000 });
      assert.equal(r.code, 0, `scenario exited ${r.code ?? r.signal}: ${r.stderr.slice(-3000)}\n${c.members.map((m) => m.proc.log().slice(-1500)).join("\n")}`);
      compare(r.stdout, "expected-3.txt");
    } finally {
      await c.stop();
    }
  });
});
