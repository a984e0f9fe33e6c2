// The v3 differential fuzzer, briefly: a fixed seed, a few hundred requests through the
// JSON gateway and over gRPC, etcd 3.4 and kvctl side by side (scripts/fuzz-v3.sh SEED
// COUNT runs it longer). Skipped when no etcd binary is on PATH. 200 requests: each watch
// waits out its gaps (200 ms per message), the run takes about 8 s on a quiet machine.
import { test } from "node:test";
import assert from "node:assert/strict";
import { etcdAvailable, runDifferential, showDivergence, withServers } from "./v3-differential.ts";
import { kvctlBin } from "../helpers/server.ts";

const hasEtcd = await etcdAvailable();

test("kvctl answers 200 seeded v3 requests (gateway and gRPC, valid and malformed) as etcd 3.4 does", { skip: !hasEtcd && "etcd is not installed: the v3 differential fuzz test needs it" }, async () => {
  await withServers(kvctlBin, async (ports) => {
    const r = await runDifferential({ seed: 20261127, count: 200, etcdPort: ports.etcd[0]!, kvctlPort: ports.kvctl[0]!, etcdPorts: ports.etcd, kvctlPorts: ports.kvctl, maxDivergences: 5 });
    const text = r.divergences.map(showDivergence);
    assert.deepEqual(text, [], text.join("\n"));
    assert.equal(r.sent, 200);
  });
});
