// The v2 differential fuzzer, briefly: a fixed seed, a few hundred requests with
// shapedParams' shapes too, etcd 3.4 and kvctl side by side (scripts/fuzz-v2.sh SEED COUNT
// runs it longer). Skipped when no etcd binary is on PATH. 320 requests: the shapes' long
// polls take longer, and this keeps the run about as long as 400 without them took (~5 s).
import { test } from "node:test";
import assert from "node:assert/strict";
import { etcdAvailable, runDifferential, startSide } from "./v2-differential.ts";
import { freePort, kvctlBin } from "../helpers/server.ts";

const hasEtcd = await etcdAvailable();

test("kvctl answers 320 seeded v2 requests (valid and malformed) as etcd 3.4 does", { skip: !hasEtcd && "etcd is not installed: the v2 differential fuzz test needs it" }, async () => {
  const [a, b, c, d] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const etcd = await startSide("etcd", a, b, kvctlBin);
  try {
    const kv = await startSide("kvctl", c, d, kvctlBin);
    try {
      const r = await runDifferential({ seed: 20260521, count: 320, etcdPort: a, kvctlPort: c, etcdPorts: etcd.ports, kvctlPorts: kv.ports, maxDivergences: 5, shapes: true });
      const text = r.divergences.map((dv) => `#${dv.n} ${dv.request}\n  ${dv.difference}\n  etcd:  ${dv.etcd}\n  kvctl: ${dv.kvctl}`);
      assert.deepEqual(text, [], text.join("\n"));
      assert.equal(r.sent, 320);
    } finally {
      await kv.stop();
    }
  } finally {
    await etcd.stop();
  }
});
