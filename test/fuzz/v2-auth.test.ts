// The v2 differential fuzzer's auth mode, briefly: a fixed seed, users, roles, grants and
// auth enable/disable mixed with keys requests under right, wrong and malformed Basic
// credentials, etcd 3.4 and kvctl side by side (FUZZ_MODE=auth scripts/fuzz-v2.sh SEED
// COUNT runs it longer). Skipped when no etcd binary is on PATH. Each checked password
// costs both servers a bcrypt: 250 requests take about 6 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { etcdAvailable, runDifferential, startSide } from "./v2-differential.ts";
import { generateAuthRequests } from "./v2-auth.ts";
import { freePort, kvctlBin } from "../helpers/server.ts";

const hasEtcd = await etcdAvailable();

test("kvctl answers 250 seeded v2 auth and keys requests (with and without credentials) as etcd 3.4 does", { skip: !hasEtcd && "etcd is not installed: the v2 auth differential fuzz test needs it" }, async () => {
  const [a, b, c, d] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const etcd = await startSide("etcd", a, b, kvctlBin);
  try {
    const kv = await startSide("kvctl", c, d, kvctlBin);
    try {
      const r = await runDifferential({ seed: 20261127, count: 250, etcdPort: a, kvctlPort: c, etcdPorts: etcd.ports, kvctlPorts: kv.ports, maxDivergences: 5, generate: generateAuthRequests });
      const text = r.divergences.map((dv) => `#${dv.n} ${dv.request}\n  ${dv.difference}\n  etcd:  ${dv.etcd}\n  kvctl: ${dv.kvctl}`);
      assert.deepEqual(text, [], text.join("\n"));
      assert.equal(r.sent, 250);
    } finally {
      await kv.stop();
    }
  } finally {
    await etcd.stop();
  }
});
