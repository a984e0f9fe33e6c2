// Global flags and the non-key commands: endpoints fail-over, KV_ and ETCDCTL_ variables,
// timeouts, Basic auth, --debug, usage errors, help, version, completion, member list,
// cluster-health and stats.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createServer as createHttpServer, type IncomingMessage } from "node:http";
import { createServer as createTcpServer, type Socket } from "node:net";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, repoRoot, runKvctl, startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
let dead: string;
before(async () => {
  srv = await startServer();
  dead = `http://127.0.0.1:${await freePort()}`;
  const r = await runKvctl(["--endpoints", srv.url, "set", "/g/key", "value"]);
  assert.equal(r.code, 0, r.stderr);
});
after(async () => {
  await srv?.stop();
});

const refused = (ep: string): string => `dial tcp ${ep.replace("http://", "")}: connect: connection refused`;

test("a dead first endpoint is skipped (with cluster sync)", async () => {
  const r = await runKvctl(["--endpoints", `${dead},${srv.url}`, "get", "/g/key"]);
  assert.deepEqual([r.stdout, r.stderr, r.code], ["value\n", "", 0]);
});

test("a dead first endpoint is skipped with --no-sync, for reads and writes", async () => {
  for (const args of [["get", "/g/key"], ["set", "/g/fo", "x"], ["mk", "/g/fo2", "y"], ["rm", "/g/fo"]]) {
    const r = await runKvctl(["--no-sync", "--endpoints", `${dead},${srv.url}`, ...args]);
    assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
  }
});

test("no reachable endpoint exits 2 while syncing, with etcdctl's cluster error detail", async () => {
  const r = await runKvctl(["--endpoints", dead, "get", "/g/key"]);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, `Error:  client: etcd cluster is unavailable or misconfigured; error #0: ${refused(dead)}\n\nerror #0: ${refused(dead)}\n\n`);
});

test("a key command connects before it checks its key, as etcdctl: no endpoint and no key exits 2 with the cluster error", async () => {
  for (const args of [["rmdir"], ["get"], ["watch"]]) {
    const r = await runKvctl(["--endpoints", dead, ...args]);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.stderr, /^Error:  client: etcd cluster is unavailable or misconfigured; error #0: dial tcp/);
  }
});

test("no reachable endpoint exits 4 with --no-sync", async () => {
  const r = await runKvctl(["--no-sync", "--endpoints", dead, "get", "/g/key"]);
  assert.equal(r.code, 4);
  assert.match(r.stderr, /^Error:  client: etcd cluster is unavailable or misconfigured; error #0: dial tcp/);
});

const envCases: { name: string; args: string[]; env: Record<string, string>; stdout: string | RegExp }[] = [
  { name: "KV_ENDPOINTS gives the endpoints", args: ["get", "/g/key"], env: { KV_ENDPOINTS: "DEAD,URL" }, stdout: "value\n" },
  { name: "ETCDCTL_ENDPOINTS is honoured for etcdctl scripts", args: ["get", "/g/key"], env: { ETCDCTL_ENDPOINTS: "URL" }, stdout: "value\n" },
  { name: "--endpoint (deprecated) works", args: ["--endpoint", "URL", "get", "/g/key"], env: {}, stdout: "value\n" },
  { name: "-C (deprecated --peers) works", args: ["-C", "URL", "get", "/g/key"], env: {}, stdout: "value\n" },
  { name: "--endpoints wins over KV_ENDPOINTS", args: ["--endpoints", "URL", "get", "/g/key"], env: { KV_ENDPOINTS: "DEAD" }, stdout: "value\n" },
  { name: "KV_OUTPUT selects the output format", args: ["get", "/g/key"], env: { KV_ENDPOINTS: "URL", KV_OUTPUT: "json" }, stdout: /^\{"action":"get"/ },
  {
    name: "KV_DEBUG and KV_NO_SYNC act like the flags",
    args: ["get", "/g/key"],
    env: { KV_ENDPOINTS: "URL", KV_DEBUG: "true", KV_NO_SYNC: "1" },
    stdout: "value\n",
  },
  {
    name: "unrelated KV_ variables (a server's) are ignored",
    args: ["get", "/g/key"],
    env: { KV_ENDPOINTS: "URL", KV_DATA_DIR: "/nonexistent", KV_NAME: "x", KV_TTL: "abc" },
    stdout: "value\n",
  },
  { name: "global flags are accepted after the command too", args: ["get", "/g/key", "--endpoints", "URL", "-o", "json"], env: {}, stdout: /^\{"action":"get"/ },
];

for (const c of envCases) {
  test(c.name, async () => {
    const env = Object.fromEntries(
      Object.entries(c.env).map(([k, v]) => [k, v.replace("URL", srv.url).replace("DEAD", dead)]),
    );
    const r = await runKvctl(c.args.map((a) => a.replace("URL", srv.url)), { env });
    assert.equal(r.code, 0, r.stderr);
    if (typeof c.stdout === "string") assert.equal(r.stdout, c.stdout);
    else assert.match(r.stdout, c.stdout);
  });
}

test("--debug prints curl commands and the endpoints on stderr", async () => {
  const r = await runKvctl(["--debug", "--endpoints", srv.url, "get", "/g/key"]);
  assert.equal(r.stdout, "value\n");
  assert.equal(
    r.stderr,
    [
      `start to sync cluster using endpoints(${srv.url})`,
      `cURL Command: curl -X GET ${srv.url}/v2/members`,
      `got endpoints(${srv.url}) after sync`,
      `Cluster-Endpoints: ${srv.url}`,
      `cURL Command: curl -X GET ${srv.url}/v2/keys/g/key?quorum=false&recursive=false&sorted=false`,
      "",
    ].join("\n"),
  );
});

/** A server that accepts connections and never answers. */
async function silentServer(): Promise<{ url: string; close(): void }> {
  const sockets = new Set<Socket>();
  const s = createTcpServer((sock) => {
    sockets.add(sock);
    sock.on("error", () => {});
  });
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const addr = s.address();
  const port = typeof addr === "object" && addr !== null ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      for (const sock of sockets) sock.destroy();
      s.close();
    },
  };
}

test("--timeout bounds each request (exceeded header timeout, exit 4)", async () => {
  const silent = await silentServer();
  try {
    const r = await runKvctl(["--no-sync", "--timeout", "200ms", "--endpoints", silent.url, "get", "/x"]);
    assert.equal(r.code, 4);
    assert.equal(
      r.stderr,
      `Error:  client: etcd cluster is unavailable or misconfigured; error #0: client: endpoint ${silent.url} exceeded header timeout\n\nerror #0: client: endpoint ${silent.url} exceeded header timeout\n\n`,
    );
  } finally {
    silent.close();
  }
});

test("--total-timeout bounds the command (context deadline exceeded, exit 4)", async () => {
  const silent = await silentServer();
  try {
    const r = await runKvctl(["--no-sync", "--timeout", "10s", "--total-timeout", "300ms", "--endpoints", silent.url, "get", "/x"]);
    assert.deepEqual([r.stderr, r.code], ["Error:  context deadline exceeded\n", 4]);
  } finally {
    silent.close();
  }
});

/** An HTTP server that records Authorization headers and answers like a v2 get. */
async function recordingServer(): Promise<{ url: string; auth: string[]; close(): void }> {
  const auth: string[] = [];
  const s = createHttpServer((req: IncomingMessage, res) => {
    auth.push(req.headers.authorization ?? "");
    res.setHeader("Content-Type", "application/json");
    res.setHeader("X-Kv-Index", "7");
    res.end(JSON.stringify({ action: "get", node: { key: "/a", value: "ok", modifiedIndex: 7, createdIndex: 7 } }));
  });
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const addr = s.address();
  const port = typeof addr === "object" && addr !== null ? addr.port : 0;
  return { url: `http://127.0.0.1:${port}`, auth, close: () => s.close() };
}

const basic = (user: string, pw: string): string => `Basic ${Buffer.from(`${user}:${pw}`).toString("base64")}`;

test("-u user:password is sent as HTTP Basic", async () => {
  const fake = await recordingServer();
  try {
    const r = await runKvctl(["--no-sync", "--endpoints", fake.url, "-u", "root:s3cret", "get", "/a"]);
    assert.deepEqual([r.stdout, r.code], ["ok\n", 0]);
    assert.deepEqual(fake.auth, [basic("root", "s3cret")]);
  } finally {
    fake.close();
  }
});

test("-u user takes the password from KV_PASSWORD, or from stdin when not a terminal", async () => {
  const fake = await recordingServer();
  try {
    const a = await runKvctl(["--no-sync", "--endpoints", fake.url, "-u", "alice", "get", "/a"], { env: { KV_PASSWORD: "pw1" } });
    assert.equal(a.code, 0, a.stderr);
    const b = await runKvctl(["--no-sync", "--endpoints", fake.url, "get", "/a"], {
      env: { KV_USERNAME: "bob" },
      input: "pw2\n",
    });
    assert.equal(b.code, 0, b.stderr);
    assert.equal(b.stdout, "ok\n", "the prompt must not reach stdout");
    assert.deepEqual(fake.auth, [basic("alice", "pw1"), basic("bob", "pw2")]);
  } finally {
    fake.close();
  }
});

const usageCases: { name: string; args: string[]; stderr: string; code: number }[] = [
  { name: "an unknown flag exits 1", args: ["get", "--bogus", "/g/key"], stderr: "Incorrect Usage: flag provided but not defined: -bogus\n", code: 1 },
  { name: "an unknown global flag exits 1", args: ["--bogus", "get", "/g/key"], stderr: "Incorrect Usage: flag provided but not defined: -bogus\n", code: 1 },
  { name: "bundled short flags are not accepted (Go flags)", args: ["ls", "-rp"], stderr: "Incorrect Usage: flag provided but not defined: -rp\n", code: 1 },
  { name: "a bad int exits 1", args: ["set", "--ttl", "abc", "/k", "v"], stderr: 'Incorrect Usage: invalid value "abc" for flag -ttl: parse error\n', code: 1 },
  { name: "a bad duration exits 1", args: ["--timeout", "abc", "get", "/k"], stderr: 'Incorrect Usage: invalid value "abc" for flag -timeout: parse error\n', code: 1 },
  { name: "an unknown command exits 3", args: ["bogus"], stderr: "No help topic for 'bogus'\n", code: 3 },
];

for (const c of usageCases) {
  test(c.name, async () => {
    const r = await runKvctl(["--endpoints", srv.url, ...c.args]);
    assert.deepEqual([r.stdout, r.stderr, r.code], ["", c.stderr, c.code]);
  });
}

test("--help lists every command, serve included", async () => {
  const r = await runKvctl(["--help"]);
  assert.equal(r.code, 0);
  for (const word of ["get", "set", "mk", "mkdir", "setdir", "update", "updatedir", "rm", "rmdir", "ls", "watch", "exec-watch", "member", "cluster-health", "stats", "completion", "version"]) {
    assert.match(r.stdout, new RegExp(`kvctl ${word}\\b`), word);
  }
  assert.match(r.stdout, /kvctl serve.*Start a kvctl member: an etcd-compatible server \(v2 and v3 APIs, gRPC, Raft\)/);
  assert.match(r.stdout, /--total-timeout/);
});

test("command help shows the command's flags", async () => {
  const r = await runKvctl(["set", "--help"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /--swap-with-value/);
});

test("version and --version print kvctl's version", async () => {
  const { version } = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string };
  for (const args of [["version"], ["--version"], ["-v"]]) {
    const r = await runKvctl(args);
    assert.deepEqual([r.stdout, r.code], [`kvctl version: ${version}\nAPI version: 2\n`, 0]);
  }
});

test("completion prints the shipped scripts", async () => {
  for (const [shell, file] of [["bash", "kvctl.bash"], ["zsh", "_kvctl"], ["fish", "kvctl.fish"]] as const) {
    const r = await runKvctl(["completion", shell]);
    assert.equal(r.code, 0);
    assert.equal(r.stdout, readFileSync(join(repoRoot, "completions", file), "utf8"));
  }
  const bad = await runKvctl(["completion", "tcsh"]);
  assert.equal(bad.code, 1);
});

test("member list prints etcdctl's line for the member", async () => {
  const r = await runKvctl(["--endpoints", srv.url, "member", "list"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^[0-9a-f]{1,16}: name=test peerURLs=${srv.peerUrl} clientURLs=${srv.url} isLeader=true\\n$`));
});

test("cluster-health reports a healthy cluster with exit 0", async () => {
  const r = await runKvctl(["--endpoints", srv.url, "cluster-health"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^member [0-9a-f]+ is healthy: got healthy result from ${srv.url}\\ncluster is healthy\\n$`));
});

test("stats store|self|leader print pretty JSON", async () => {
  const fields = { store: "getsSuccess", self: "name", leader: "leader" } as const;
  for (const [kind, field] of Object.entries(fields)) {
    const r = await runKvctl(["--endpoints", srv.url, "stats", kind]);
    assert.equal(r.code, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.ok(field in doc, `${kind}: ${r.stdout}`);
    assert.match(r.stdout, /^\{\n {2}"/);
  }
  const bad = await runKvctl(["--endpoints", srv.url, "stats", "bogus"]);
  assert.equal(bad.code, 1);
});
