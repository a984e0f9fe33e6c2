// `kvctl v3 txn` and `kvctl v3 watch -i` read from stdin, beside `ETCDCTL_API=3 etcdctl`
// 3.4.23 against the same `kvctl serve`: the same stdout, stderr and exit code for
// request lines whose command refuses its arguments, malformed lines and the end of input;
// a watch -i line starts its watch as it arrives (before the input ends).
// Ports: KVCTL_V3_TEST_PORTS (helpers/etcd.ts).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { gatewayPut, kvctlCommand, runEtcdctl, runKvctlV3, startV3Server, type V3Server } from "../helpers/etcd.ts";
import { installed } from "../helpers/grpc.ts";
import { repoRoot } from "../helpers/server.ts";
import { whenOutput } from "../helpers/run-process.ts";

describe("stdin-driven commands", { skip: !installed("etcdctl"), timeout: 60_000 }, () => {
  let s: V3Server;
  before(async () => {
    s = await startV3Server("kvctl");
    await gatewayPut(s.url, "/x", "1");
  });
  after(() => s?.stop());

  const same = async (args: string[], input: string): Promise<void> => {
    const e = await runEtcdctl(s.url, args, { input });
    const k = await runKvctlV3(s.url, args, { input });
    const what = `${args.join(" ")} <<< ${JSON.stringify(input)}`;
    assert.equal(k.code, e.code, `${what}: exit code (${k.stderr})`);
    assert.equal(k.stdout, e.stdout, `${what}: stdout`);
    assert.equal(k.stderr, e.stderr, `${what}: stderr`);
  };

  test("txn: argument checks of the request lines' commands", async () => {
    await same(["txn"], 'value("/x") = "1"\n\nput /k\n\n');
    await same(["txn"], 'value("/x") = "1"\n\nget\n\n');
    await same(["txn"], 'value("/x") = "1"\n\ndel /a --prefix --from-key\n\n');
    await same(["txn"], 'value("/x") = "1"\n\nput /k v extra\n\n');
    await same(["txn"], "bogus\n\n");
    await same(["txn"], 'value("/x") = "1"\n\nget /x\n');
  });

  test("watch -i: malformed lines, end of input", async () => {
    await same(["watch", "-i"], "\nwatch\nnope\nprogress\n");
    await same(["watch", "-i"], "watch /nothing\n");
    await same(["watch", "-i"], "");
  });

  test("watch -i starts each watch as its line arrives", async () => {
    const child = spawn(process.execPath, [...kvctlCommand(), "v3", "--endpoints", s.url, "watch", "-i"], { cwd: repoRoot, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stdin.write("watch /live\n");
    // The watch is registered once the line is read; puts until one is seen.
    const put = setInterval(() => void gatewayPut(s.url, "/live", "v"), 200);
    try {
      await whenOutput(child, () => out.includes("PUT\n/live\nv\n"), 10_000, () => out);
    } finally {
      clearInterval(put);
    }
    let err = "";
    child.stderr.on("data", (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => {
      child.on("close", (c) => resolve(c));
      child.stdin.end();
    });
    assert.equal(code, 3);
    assert.equal(err, "Error: Error reading watch request line: EOF\n");
  });
});
