// The v2 CLI differential fuzzer, briefly: a fixed seed of command lines run as
// `ETCDCTL_API=2 etcdctl` on etcd 3.4 and as kvctl on kvctl, same state before each
// (scripts/fuzz-v2.sh cli SEED COUNT runs it longer). Skipped when etcd or etcdctl is
// not on PATH. Each kvctl command is a Node process (~0.2 s): 30 commands take about 8 s on a quiet machine.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { etcdAvailable, startSide } from "./v2-differential.ts";
import { runCliDifferential, showCliDivergence } from "./v2-cli.ts";
import { freePort, kvctlBin } from "../helpers/server.ts";

const hasEtcd = (await etcdAvailable()) && spawnSync("etcdctl", ["version"], { stdio: "ignore" }).status === 0;

test("kvctl prints what etcdctl (API 2) prints for 30 seeded command lines, and exits alike", { skip: !hasEtcd && "etcd/etcdctl are not installed: the v2 CLI differential fuzz test needs them" }, async () => {
  const [a, b, c, d, dead] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const etcd = await startSide("etcd", a, b, kvctlBin);
  try {
    const kv = await startSide("kvctl", c, d, kvctlBin);
    try {
      const r = await runCliDifferential({
        seed: 20261127,
        count: 30,
        etcd: { kind: "etcd", endpoint: `http://127.0.0.1:${a}`, ports: etcd.ports },
        kvctl: { kind: "kvctl", endpoint: `http://127.0.0.1:${c}`, ports: kv.ports },
        deadPort: dead,
        maxDivergences: 5,
      });
      const text = r.divergences.map(showCliDivergence);
      assert.deepEqual(text, [], text.join("\n"));
      assert.equal(r.sent, 30);
    } finally {
      await kv.stop();
    }
  } finally {
    await etcd.stop();
  }
});
