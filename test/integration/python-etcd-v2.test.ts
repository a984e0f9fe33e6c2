// python-etcd 0.4.5 (Debian's python3-etcd, the v2 client most Python programs use) runs
// its whole API against a kvctl member (test/clients/python-etcd-v2.py) and must print what
// it printed against etcd 3.4.23 (test/clients/python-etcd-v2.expected.txt), line for line.
// Skipped, with a notice, when /usr/bin/python3 cannot import etcd.
//
// KVCTL_TEST_SERVER=etcd runs it against etcd instead; with KVCTL_RECORD_EXPECTED=1 as well,
// that run writes the expected file.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, repoRoot, startServer } from "../helpers/server.ts";
import { runProcess } from "../helpers/run-process.ts";

const PYTHON = "/usr/bin/python3";
const scenario = join(repoRoot, "test", "clients", "python-etcd-v2.py");
const expectedFile = join(repoRoot, "test", "clients", "python-etcd-v2.expected.txt");

const probe = await runProcess(PYTHON, ["-c", "import etcd"], { env: process.env, timeoutMs: 10_000 }).catch(() => undefined);
const skip = probe?.code !== 0 && `${PYTHON} cannot import etcd (apt-get install python3-etcd)`;
if (skip !== false) console.log(`# python-etcd-v2: skipped: ${skip}`);

test("python-etcd 0.4.5 sees kvctl as it sees etcd 3.4.23", { skip, timeout: 60_000 }, async () => {
  const server = await startServer();
  try {
    const port = new URL(server.url).port;
    const proxyPort = String(await freePort());
    const run = await runProcess(PYTHON, [scenario, "--port", port, "--proxy-port", proxyPort], { env: process.env, timeoutMs: 50_000 });
    const detail = `exit ${String(run.code ?? run.signal)}; stderr:\n${run.stderr.slice(-3000)}\nserver:\n${server.logs().slice(-2000)}`;
    assert.equal(run.code, 0, detail);
    if (process.env["KVCTL_TEST_SERVER"] === "etcd" && process.env["KVCTL_RECORD_EXPECTED"] === "1") {
      writeFileSync(expectedFile, run.stdout);
    }
    const want = readFileSync(expectedFile, "utf8").split("\n");
    const got = run.stdout.split("\n");
    // Step by step first: the first differing step names what broke.
    for (let i = 0; i < Math.max(want.length, got.length); i++) {
      assert.equal(got[i], want[i], `line ${i + 1} differs from etcd's; ${detail}`);
    }
  } finally {
    await server.stop();
  }
});
