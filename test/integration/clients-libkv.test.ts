// docker's libkv 0.2.1 (Debian golang-github-docker-libkv-dev), whose etcd store speaks
// the v2 API through etcd's Go v2 client, against `kvctl serve`: Put/Get/Exists/Delete
// (TTLs, dirs, binary values), List/DeleteTree, AtomicPut/AtomicDelete (create, stale
// index, wrong value), Watch/WatchTree, NewLock (renewals, waiting, stop channel, expiry
// after renewals stop) and v2 auth refusals (test/clients/libkv/scenario.go). Each step's
// line against kvctl must be etcd 3.4.23's, recorded in test/clients/libkv/expected.txt.
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
import { test } from "node:test";
import { startGrpcServer } from "../helpers/grpc.ts";
import { runProcess } from "../helpers/run-process.ts";
import { repoRoot } from "../helpers/server.ts";

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

test(`docker's libkv 0.2.1 (etcd v2 store) against ${kind}: every step answers as etcd 3.4.23's`, { skip: unavailable(), timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "kvctl-libkv-"));
  const bin = join(dir, "scenario");
  const built = await runProcess(join(here, "build.sh"), [bin], { cwd: repoRoot, env: process.env, timeoutMs: 100_000 });
  assert.equal(built.code, 0, `build: ${built.stderr}`);
  const s = await startGrpcServer(kind, ["--enable-v2=true"]);
  try {
    const port = s.endpoint.split(":")[1]!;
    // The scenario's first call retries until the server answers (the client's own retry
    // over its endpoint list); 20 s at most.
    let r = await runProcess(bin, ["-endpoint", `127.0.0.1:${port}`], { cwd: dir, env: process.env, timeoutMs: 60_000 });
    for (let i = 0; i < 40 && r.code !== 0 && /^base:/m.test(r.stderr); i++) {
      await new Promise((res) => setTimeout(res, 500));
      r = await runProcess(bin, ["-endpoint", `127.0.0.1:${port}`], { cwd: dir, env: process.env, timeoutMs: 60_000 });
    }
    assert.equal(r.code, 0, `scenario exited ${r.code ?? r.signal}: ${r.stderr.slice(-3000)}\nserver: ${s.logs().slice(-2000)}`);
    const file = join(here, "expected.txt");
    if (record) {
      writeFileSync(file, r.stdout);
      return;
    }
    // Line by line, so that a failure names the steps that differ.
    assert.deepEqual(r.stdout.split("\n"), readFileSync(file, "utf8").split("\n"), "libkv against kvctl differs from etcd 3.4.23");
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
