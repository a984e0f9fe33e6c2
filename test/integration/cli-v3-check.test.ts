// `kvctl v3 check perf|datascale` against a real `kvctl serve`: etcdctl 3.4.23's refusals
// (unknown --load: exit 4; keys under the prefix: exit 3) with the same words; datascale's
// 10,000 puts with --auto-compact and --auto-defrag (etcdctl's lines, the prefix empty
// afterwards); perf's run ending in etcdctl's verdict lines, exit 0 on PASS and 1 on FAIL
// (the verdict depends on the machine's load, its shape does not). perf runs in process with
// the "s" model's rate and clients for 5 s instead of its 60 (the test suite runs serially).
// Ports: KVCTL_V3_TEST_PORTS (helpers/etcd.ts).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { gateway, gatewayPut, runEtcdctl, runKvctlV3, startV3Server, type V3Server } from "../helpers/etcd.ts";
import { installed } from "../helpers/grpc.ts";
import { parseV3Argv } from "../../src/cli/commands/v3/argv.ts";
import { perf } from "../../src/cli/commands/v3/check.ts";

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");

async function count(url: string, prefix: string): Promise<number> {
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const r = await gateway<{ count?: string }>(url, "/v3/kv/range", { key: b64(prefix), range_end: b64(end), count_only: true });
  return Number(r.count ?? 0);
}

describe("check", { timeout: 240_000 }, () => {
  let s: V3Server;
  before(async () => {
    s = await startV3Server("kvctl");
  });
  after(() => s?.stop());

  test("refusals as etcdctl's: unknown load (4), keys under the prefix (3)", { skip: !installed("etcdctl") }, async () => {
    await gatewayPut(s.url, "/etcdctl-check-perf/x", "1");
    await gatewayPut(s.url, "/busy/x", "1");
    for (const args of [
      ["check", "perf", "--load", "q"],
      ["check", "datascale", "--load", "huge"],
      ["check", "perf"],
      ["check", "datascale", "--prefix", "/busy/"],
    ]) {
      const e = await runEtcdctl(s.url, args);
      const k = await runKvctlV3(s.url, args);
      assert.equal(k.code, e.code, args.join(" "));
      assert.equal(k.stderr, e.stderr, args.join(" "));
      assert.equal(k.stdout, "");
    }
    await gateway(s.url, "/v3/kv/deleterange", { key: b64("/etcdctl-check-perf/x") });
  });

  test("datascale: 10,000 puts, memory line, compacted and defragmented, prefix emptied", async () => {
    const r = await runKvctlV3(s.url, ["check", "datascale", "--auto-compact", "--auto-defrag"], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    // Each endpoint as given, as clientv3's Endpoints() returns it.
    const host = s.url;
    assert.match(
      r.stdout,
      new RegExp(
        "^Start data scale check for work load \\[10000 key-value pairs, 1024 bytes per key-value, 50 concurrent clients\\]\\.\\n" +
          "Compacting with revision (\\d+)\\nCompacted with revision \\1\\n" +
          `Defragmenting "${host}"\\nDefragmented "${host}"\\n` +
          "PASS: Approximate system memory used : -?\\d+\\.\\d\\d MB\\.\\n$",
      ),
    );
    assert.equal(await count(s.url, "/etcdctl-check-datascale/"), 0);
  });

  test("perf: puts at the model's rate, etcdctl's verdict lines", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (t: string) => void out.push(t), stderr: (t: string) => void err.push(t) };
    const code = await perf(parseV3Argv(["check", "perf", "--endpoints", s.url], {}), io, { limit: 150, clients: 50, duration: 5 });
    const r = { code, stdout: out.join(""), stderr: err.join("") };
    const lines = r.stdout.trimEnd().split("\n");
    const verdict = lines.pop();
    assert.match(lines[0] ?? "", /^(PASS: Throughput is|FAIL: Throughput too low:) \d+ writes\/s$/);
    assert.match(lines[1] ?? "", /^(PASS: Slowest request took|Slowest request took too long:) \d+\.\d{6}s$/);
    assert.match(lines[2] ?? "", /^(PASS: Stddev is|Stddev too high:) \d+\.\d{6}s$/);
    assert.equal(lines.length, 3, r.stdout);
    assert.equal(verdict, lines.every((l) => l.startsWith("PASS")) ? "PASS" : "FAIL");
    assert.equal(r.code, verdict === "PASS" ? 0 : 1, r.stderr);
    // The rate is 150 puts/s: a run far from it is a broken limiter, not a slow machine.
    const rate = Number(/(\d+) writes\/s/.exec(lines[0] ?? "")?.[1]);
    assert.ok(rate > 100 && rate < 160, `throughput ${rate}`);
    assert.equal(await count(s.url, "/etcdctl-check-perf/"), 0);
  });
});
