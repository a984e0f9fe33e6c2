// `kvctl v3 make-mirror` with real servers:
// (a) kvctl -> kvctl: 1,200 keys under the prefix (more than one page of the initial copy)
//     and keys outside it; once copied, puts, deletes and a txn at the source reach the
//     destination under --dest-prefix; after 30 s the running count is printed, as
//     etcdctl prints it;
// (b) a live etcd 3.4 -> kvctl, every key (no --prefix), then --prefix with
//     --no-dest-prefix: the keys land at the destination's root;
// (c) a source with auth on (--user) into a TLS destination that asks for a client
//     certificate (--dest-cacert, --dest-cert, --dest-key);
// (d) argument errors: the same words and exit codes as etcdctl 3.4.23.
// The four run at the same time, each on servers of its own: (a) cannot end before its
// mirror's 30 s count, and the others fit in that wait.
// Ports: KVCTL_V3_TEST_PORTS (helpers/etcd.ts).

import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { collect, gateway, gatewayPut, runEtcdctl, runKvctlV3, spawnKvctlV3, startV3Server, type V3Server } from "../helpers/etcd.ts";
import { installed } from "../helpers/grpc.ts";
import { stopProcess } from "../helpers/run-process.ts";
import { eventually } from "../../src/until.test-helper.ts";
import { readFileSync } from "node:fs";
import { CertDir } from "../helpers/certs.ts";
import { request, startTlsServer, type TlsTestServer } from "../helpers/tls-server.ts";

const b64 = (s: string): string => Buffer.from(s, "utf8").toString("base64");
const unb64 = (s: string | undefined): string => Buffer.from(s ?? "", "base64").toString("utf8");

/** Every key and value under `prefix` ("" = all), as "key=value" lines in key order. */
async function dump(url: string, prefix: string): Promise<string[]> {
  const key = prefix === "" ? "\x00" : prefix;
  const end = prefix === "" ? "\x00" : prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const r = await gateway<{ kvs?: { key: string; value?: string }[] }>(url, "/v3/kv/range", { key: b64(key), range_end: b64(end) });
  return (r.kvs ?? []).map((kv) => `${unb64(kv.key)}=${unb64(kv.value)}`);
}

/** Puts through the gateway, 50 at a time (one process per put would take minutes). */
async function fill(url: string, prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, j) => gatewayPut(url, `${prefix}${String(i + j).padStart(5, "0")}`, `v${i + j}`)));
  }
}

const servers: V3Server[] = [];
const mirrors: ChildProcess[] = [];
after(async () => {
  for (const m of mirrors) await stopProcess(m);
  for (const s of servers) await s.stop();
});

// One start at a time: the tests run concurrently, and two port picks at once (rangePort)
// could choose the same free port.
let starting: Promise<unknown> = Promise.resolve();
async function server(kind: "etcd" | "kvctl"): Promise<V3Server> {
  const next = starting.then(() => startV3Server(kind));
  starting = next.catch(() => undefined);
  const s = await next;
  servers.push(s);
  return s;
}

describe("make-mirror", { timeout: 180_000, concurrency: true }, () => {
  test("kvctl -> kvctl: initial copy past one page, then the updates under --dest-prefix; the count every 30 s", async () => {
    const src = await server("kvctl");
    const dst = await server("kvctl");
    await fill(src.url, "/src/", 1200);
    await gatewayPut(src.url, "/other/x", "not mirrored");
    const m = spawnKvctlV3(src.url, ["make-mirror", "--prefix", "/src/", "--dest-prefix", "/dst/", dst.url]);
    mirrors.push(m);
    const out = collect(m);
    const expected = async (): Promise<string[]> => (await dump(src.url, "/src/")).map((l) => l.replace(/^\/src\//, "/dst/"));
    await eventually(async () => ((await dump(dst.url, "/dst/")).length === 1200 ? true : undefined), "the initial copy", 60_000, { intervalMs: 200 });
    assert.deepEqual(await dump(dst.url, "/dst/"), await expected());

    await gatewayPut(src.url, "/src/00001", "changed");
    await gatewayPut(src.url, "/src/new", "n");
    await gateway(src.url, "/v3/kv/deleterange", { key: b64("/src/00002") });
    await gateway(src.url, "/v3/kv/txn", {
      success: [{ request_put: { key: b64("/src/t1"), value: b64("1") } }, { request_delete_range: { key: b64("/src/00003") } }, { request_put: { key: b64("/other/y"), value: b64("no") } }],
    });
    const want = await expected();
    await eventually(async () => ((await dump(dst.url, "/dst/")).join("\n") === want.join("\n") ? true : undefined), "the updates mirrored", 20_000, { intervalMs: 100 });
    assert.deepEqual(await dump(dst.url, "/other/"), []);
    assert.deepEqual(await dump(dst.url, "/src/"), []);
    // 1,200 copied + put, put, delete, then the txn's put and delete (its /other/ put is not watched).
    await eventually(async () => (out.text() !== "" ? true : undefined), "the 30 s count", 40_000, { intervalMs: 500 });
    assert.equal(out.text(), "1205\n");
  });

  test("etcd -> kvctl: every key, then --prefix with --no-dest-prefix", { skip: !installed("etcd") }, async () => {
    const src = await server("etcd");
    const dst = await server("kvctl");
    await fill(src.url, "/a/", 30);
    await gatewayPut(src.url, "top", "t");
    const all = spawnKvctlV3(src.url, ["make-mirror", dst.url]);
    mirrors.push(all);
    await eventually(async () => ((await dump(dst.url, "")).length === 31 ? true : undefined), "every key copied", 30_000, { intervalMs: 100 });
    await gatewayPut(src.url, "/a/late", "l");
    await eventually(async () => ((await dump(dst.url, "")).join() === (await dump(src.url, "")).join() ? true : undefined), "the late put", 20_000, { intervalMs: 100 });
    await stopProcess(all);

    const dst2 = await server("kvctl");
    const root = spawnKvctlV3(src.url, ["make-mirror", "--prefix", "/a/", "--no-dest-prefix", dst2.url]);
    mirrors.push(root);
    await eventually(async () => ((await dump(dst2.url, "")).length === 31 ? true : undefined), "the prefix copied to the root", 30_000, { intervalMs: 100 });
    const keys = (await dump(dst2.url, "")).map((l) => l.split("=")[0]);
    assert.ok(keys.includes("00000") && keys.includes("late") && !keys.includes("top"), keys.join(","));
  });

  test("a source with auth on into a TLS destination with a client certificate", async () => {
    const certs = new CertDir();
    let dst: TlsTestServer | undefined;
    try {
      const serverCert = certs.server();
      const client = certs.client("mirror");
      const tls = { ca: readFileSync(certs.ca.cert), cert: readFileSync(client.cert), key: readFileSync(client.key) };
      dst = await startTlsServer({
        flags: ["--cert-file", serverCert.cert, "--key-file", serverCert.key, "--client-cert-auth", "--trusted-ca-file", certs.ca.cert],
        health: tls,
      });
      const src = await server("kvctl");
      await gatewayPut(src.url, "/s/1", "one");
      await gateway(src.url, "/v3/auth/user/add", { name: "root", password: "pw" });
      await gateway(src.url, "/v3/auth/user/grant", { user: "root", role: "root" });
      await gateway(src.url, "/v3/auth/enable", {});
      const m = spawnKvctlV3(src.url, ["--user", "root:pw", "make-mirror", "--prefix", "/s/", "--dest-cacert", certs.ca.cert, "--dest-cert", client.cert, "--dest-key", client.key, dst.url]);
      mirrors.push(m);
      const value = async (): Promise<string | undefined> => {
        const r = await request(dst!.url, { method: "POST", path: "/v3/kv/range", body: JSON.stringify({ key: b64("/s/1") }), tls });
        const kv = (JSON.parse(r.body) as { kvs?: { value: string }[] }).kvs?.[0];
        return kv === undefined ? undefined : unb64(kv.value);
      };
      assert.equal(await eventually(value, "the key in the TLS destination", 30_000, { intervalMs: 100 }), "one");
      await stopProcess(m);
    } finally {
      await dst?.stop();
      certs.remove();
    }
  });

  test("argument errors as etcdctl's", { skip: !installed("etcdctl") }, async () => {
    const s = await server("kvctl");
    for (const args of [["make-mirror"], ["make-mirror", "a", "b"], ["make-mirror", "--dest-prefix", "x", "--no-dest-prefix", s.url]]) {
      const e = await runEtcdctl(s.url, args);
      const k = await runKvctlV3(s.url, args);
      assert.equal(k.code, e.code, args.join(" "));
      assert.equal(k.code, 128);
      assert.equal(k.stderr, e.stderr.replace(/^[\s\S]*?(Error: )/, "$1"), args.join(" "));
    }
  });
});
