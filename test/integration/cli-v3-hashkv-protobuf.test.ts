// `kvctl v3 endpoint hashkv` (gRPC) and `kvctl v3 -w protobuf` against the same server as
// `ETCDCTL_API=3 etcdctl` 3.4.23: a real `kvctl serve` and a real etcd 3.4, each asked by
// both clients in turn, stdout compared byte for byte with the exit codes:
// (a) endpoint hashkv in every format, a future --rev, a dead endpoint beside a live one,
//     and with auth on (--user, the token as gRPC metadata);
// (b) endpoint hashkv over TLS with a client certificate (kvctl serve --client-cert-auth);
// (c) -w protobuf of reads (get variants, member/user/role/lease lists and gets,
//     timetolive, watch --rev), and etcdctl's refusals (lease revoke's "marshal
//     unsupported", endpoint status).
// Ports: KVCTL_V3_TEST_PORTS (helpers/etcd.ts).

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { gateway, gatewayPut, kvctlCommand, rangePort, startV3Server, type V3Server } from "../helpers/etcd.ts";
import { installed } from "../helpers/grpc.ts";
import { repoRoot } from "../helpers/server.ts";
import { readFileSync } from "node:fs";
import { CertDir } from "../helpers/certs.ts";
import { startTlsServer } from "../helpers/tls-server.ts";

interface BytesResult {
  stdout: Buffer;
  stderr: string;
  code: number | null;
}

const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("KV_") && !k.startsWith("ETCDCTL_") && k !== "NO_COLOR"));

/** Runs a client to its end, stdout kept as bytes (protobuf output is binary). */
function runBytes(file: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<BytesResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: repoRoot, env, stdio: ["ignore", "pipe", "pipe"], timeout: 30_000 });
    const out: Buffer[] = [];
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => out.push(c));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
    child.on("error", reject);
    child.on("close", (code) => resolve({ stdout: Buffer.concat(out), stderr, code }));
  });
}

const kvctl = (endpoints: string, args: readonly string[]): Promise<BytesResult> =>
  runBytes(process.execPath, [...kvctlCommand(), "v3", "--endpoints", endpoints, ...args], cleanEnv());

async function etcdctl(endpoints: string, args: readonly string[]): Promise<BytesResult> {
  const r = await runBytes("/usr/bin/etcdctl", ["--endpoints", endpoints, ...args], { ...cleanEnv(), ETCDCTL_API: "3" });
  // clientv3's JSON warning lines are logging, not output.
  return { ...r, stderr: r.stderr.split("\n").filter((l) => !l.startsWith('{"level":')).join("\n") };
}

/** Both clients against one server: same stdout bytes, same exit code, same stderr. */
async function same(endpoints: string, args: readonly string[]): Promise<BytesResult> {
  const e = await etcdctl(endpoints, args);
  const k = await kvctl(endpoints, args);
  assert.equal(k.code, e.code, `${args.join(" ")}: exit code (kvctl stderr: ${k.stderr})`);
  assert.equal(k.stdout.toString("hex"), e.stdout.toString("hex"), `${args.join(" ")}: stdout`);
  assert.equal(k.stderr, e.stderr, `${args.join(" ")}: stderr`);
  return k;
}

const host = (url: string): string => url.replace("http://", "");
const skip = !installed("etcd") || !installed("etcdctl");

for (const kind of ["kvctl", "etcd"] as const) {
  describe(`against ${kind}`, { skip, timeout: 120_000 }, () => {
    let s: V3Server;
    let lease = "";
    before(async () => {
      s = await startV3Server(kind);
      for (let i = 0; i < 5; i++) await gatewayPut(s.url, `/k/${i}`, `v${i}`);
      await gatewayPut(s.url, "/k/1", "again");
      await gateway(s.url, "/v3/kv/deleterange", { key: Buffer.from("/k/4").toString("base64") });
      const g = await gateway<{ ID: string }>(s.url, "/v3/lease/grant", { TTL: 600 });
      lease = BigInt(g.ID).toString(16);
      await gateway(s.url, "/v3/kv/put", { key: Buffer.from("/leased").toString("base64"), value: Buffer.from("x").toString("base64"), lease: g.ID });
      await gateway(s.url, "/v3/auth/user/add", { name: "u1", password: "p" });
      await gateway(s.url, "/v3/auth/role/add", { name: "r1" });
      await gateway(s.url, "/v3/auth/role/grant", { name: "r1", perm: { permType: "READWRITE", key: Buffer.from("/a").toString("base64"), range_end: Buffer.from("/b").toString("base64") } });
      await gateway(s.url, "/v3/auth/user/grant", { user: "u1", role: "r1" });
    });
    after(() => s?.stop());

    test("endpoint hashkv: every format, a future revision, a dead endpoint", async () => {
      const ep = host(s.url);
      for (const w of ["simple", "json", "table", "fields", "protobuf"]) await same(ep, ["endpoint", "hashkv", "-w", w]);
      const now = await same(ep, ["endpoint", "hashkv"]);
      assert.match(now.stdout.toString(), new RegExp(`^${ep}, \\d+\\n$`));
      await same(ep, ["endpoint", "hashkv", "--rev", "3"]);
      const future = await same(ep, ["endpoint", "hashkv", "--rev", "100000"]);
      assert.equal(future.code, 1);
      assert.equal(future.stderr, `Failed to get the hash of endpoint ${ep} (etcdserver: mvcc: required revision is a future revision)\nError: etcdserver: mvcc: required revision is a future revision\n`);
      // A dead endpoint: etcdctl waits out its command timeout, kvctl fails at once; same words.
      const dead = `127.0.0.1:${await rangePort()}`;
      const both = await same(`${ep},${dead}`, ["endpoint", "hashkv", "--command-timeout", "1s"]);
      assert.equal(both.code, 1);
      assert.match(both.stdout.toString(), new RegExp(`^${ep}, \\d+\\n$`));
    });

    test("-w protobuf: reads byte for byte etcdctl's", async () => {
      const ep = host(s.url);
      const reads = [
        ["get", "/k/1"],
        ["get", "--prefix", "/k/"],
        ["get", "--prefix", "/k/", "--limit", "2", "--keys-only"],
        ["get", "/nothing"],
        ["get", "/k/1", "--rev", "2"],
        ["get", "/leased"],
        ["member", "list"],
        ["alarm", "list"],
        ["user", "list"],
        ["user", "get", "u1"],
        ["user", "get", "u1", "--detail"],
        ["role", "list"],
        ["role", "get", "r1"],
        ["lease", "list"],
        ["lease", "timetolive", lease, "--keys"],
      ];
      for (const args of reads) {
        const r = await same(ep, ["-w", "protobuf", ...args]);
        assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
      }
      // A watch from a past revision: its first response, then the client is stopped.
      const watch = async (run: (a: string[]) => ReturnType<typeof spawn>): Promise<Buffer> => {
        const child = run(["-w", "protobuf", "watch", "--prefix", "/k/", "--rev", "2"]);
        const out: Buffer[] = [];
        child.stdout?.on("data", (c: Buffer) => out.push(c));
        await new Promise<void>((resolve) => {
          child.stdout?.on("data", () => {
            // Six events (puts and the delete) in one response: 2 + 6 events' bytes at least.
            if (Buffer.concat(out).length > 100) resolve();
          });
        });
        child.kill("SIGTERM");
        return Buffer.concat(out);
      };
      const kw = await watch((a) => spawn(process.execPath, [...kvctlCommand(), "v3", "--endpoints", ep, ...a], { cwd: repoRoot, env: cleanEnv() }));
      const ew = await watch((a) => spawn("/usr/bin/etcdctl", ["--endpoints", ep, ...a], { env: { ...cleanEnv(), ETCDCTL_API: "3" } }));
      assert.equal(kw.toString("hex"), ew.toString("hex"));
    });

    test("-w protobuf: etcdctl's refusals", async () => {
      const ep = host(s.url);
      assert.equal((await same(ep, ["-w", "protobuf", "endpoint", "status"])).code, 4);
      assert.equal((await same(ep, ["-w", "protobuf", "lease", "revoke", "1234"])).code, 1);
      // A revoke that succeeds cannot print: clientv3.LeaseRevokeResponse has no Marshal.
      const e = await etcdctl(ep, ["lease", "grant", "100"]);
      const k = await kvctl(ep, ["lease", "grant", "100"]);
      const id = (r: BytesResult): string => /lease ([0-9a-f]+) granted/.exec(r.stdout.toString())?.[1] ?? "";
      const er = await etcdctl(ep, ["-w", "protobuf", "lease", "revoke", id(e)]);
      const kr = await kvctl(ep, ["-w", "protobuf", "lease", "revoke", id(k)]);
      assert.equal(kr.code, 4);
      assert.equal(er.code, 4);
      const header = (t: string): string => t.replace(/revision:\d+/, "revision:N");
      assert.match(kr.stderr, /^Error: marshal unsupported for type clientv3\.LeaseRevokeResponse \(\{cluster_id:\d+ member_id:\d+ revision:\d+ raft_term:\d+ \}\)\n$/);
      assert.equal(header(kr.stderr), header(er.stderr));
    });

    test("endpoint hashkv with auth on: the token travels as gRPC metadata", async () => {
      const ep = host(s.url);
      await gateway(s.url, "/v3/auth/user/add", { name: "root", password: "rootpw" });
      await gateway(s.url, "/v3/auth/user/grant", { user: "root", role: "root" });
      await gateway(s.url, "/v3/auth/enable", {});
      const r = await same(ep, ["--user", "root:rootpw", "endpoint", "hashkv"]);
      assert.equal(r.code, 0);
      const bad = await same(ep, ["--user", "root:wrong", "endpoint", "hashkv"]);
      assert.equal(bad.code, 2);
    });
  });
}

test("endpoint hashkv over TLS with a client certificate, as etcdctl", { skip, timeout: 60_000 }, async () => {
  const certs = new CertDir();
  try {
    const server = certs.server();
    const client = certs.client("hashkv");
    const s = await startTlsServer({
      flags: ["--cert-file", server.cert, "--key-file", server.key, "--client-cert-auth", "--trusted-ca-file", certs.ca.cert],
      health: { ca: readFileSync(certs.ca.cert), cert: readFileSync(client.cert), key: readFileSync(client.key) },
    });
    try {
      const tls = ["--cacert", certs.ca.cert, "--cert", client.cert, "--key", client.key];
      const r = await same(s.url, [...tls, "endpoint", "hashkv"]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout.toString(), new RegExp(`^${s.url}, \\d+\\n$`));
      await same(s.url, [...tls, "endpoint", "hashkv", "-w", "json"]);
    } finally {
      await s.stop();
    }
  } finally {
    certs.remove();
  }
});
