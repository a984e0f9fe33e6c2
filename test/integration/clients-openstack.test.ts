// OpenStack's etcd clients, as Debian packages them, against `kvctl serve`:
// - etcd3gw 2.0 (python3-etcd3gw): the v3 JSON gateway over HTTP, base64 keys, the
//   /v3alpha|/v3beta|/v3 paths, txns, leases, locks, watch streams in HTTP chunks
//   (test/clients/etcd3gw.py);
// - tooz 3.1 (python3-tooz): coordination through its etcd3+http:// driver (over etcd3gw:
//   groups, membership leases, heartbeats, locks) and its etcd:// driver (v2 keys: TTL
//   locks, waits, prevIndex releases) (test/clients/tooz.py).
// Each scenario prints one normalized line per step; against kvctl the lines must be etcd
// 3.4.23's, recorded in test/clients/etcd3gw.expected.txt and tooz.expected.txt. Each is
// skipped, with a notice, when /usr/bin/python3 cannot import its package.
//
// To record the expected files again from etcd (installed as `etcd`):
//   KVCTL_OPENSTACK_RECORD=1 node --import tsx --test test/integration/clients-openstack.test.ts
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { startGrpcServer } from "../helpers/grpc.ts";
import { runProcess } from "../helpers/run-process.ts";
import { repoRoot } from "../helpers/server.ts";

const PYTHON = "/usr/bin/python3";
const record = process.env["KVCTL_OPENSTACK_RECORD"] === "1";
const kind = record ? "etcd" : "kvctl";

function unavailable(module: string, pkg: string): string | false {
  const r = spawnSync(PYTHON, ["-c", `import ${module}`], { encoding: "utf8" });
  if (r.error === undefined && r.status === 0) return false;
  const why = `${PYTHON} cannot import ${module} (apt-get install ${pkg})`;
  process.stderr.write(`clients-openstack: ${module} skipped: ${why}\n`);
  return why;
}

async function check(name: string): Promise<void> {
  const s = await startGrpcServer(kind, ["--enable-v2=true"]);
  try {
    const port = s.endpoint.split(":")[1]!;
    const script = join(repoRoot, "test", "clients", `${name}.py`);
    const r = await runProcess(PYTHON, [script, "--port", port, "--wait", "20"], { cwd: repoRoot, env: process.env, timeoutMs: 55_000 });
    assert.equal(r.code, 0, `${name} exited ${r.code ?? r.signal}: ${r.stderr.slice(-3000)}\nserver: ${s.logs().slice(-2000)}`);
    const actual = r.stdout.split("\n").filter((l) => !l.startsWith("# ")).join("\n");
    const file = join(repoRoot, "test", "clients", `${name}.expected.txt`);
    if (record) {
      writeFileSync(file, actual);
      return;
    }
    // Line by line, so that a failure names the steps that differ.
    assert.deepEqual(actual.split("\n"), readFileSync(file, "utf8").split("\n"), `${name} against kvctl differs from etcd 3.4.23`);
  } finally {
    await s.stop();
  }
}

describe(`OpenStack's etcd clients against ${kind}`, { concurrency: true }, () => {
  test("etcd3gw 2.0: every step answers as etcd 3.4.23's", { skip: unavailable("etcd3gw", "python3-etcd3gw"), timeout: 60_000 }, async () => {
    await check("etcd3gw");
  });

  test("tooz 3.1, etcd3+http:// and etcd:// drivers: every step answers as etcd 3.4.23's", { skip: unavailable("tooz.drivers.etcd3gw", "python3-tooz"), timeout: 60_000 }, async () => {
    await check("tooz");
  });
});
