// The --proxy*, --discovery-srv* flags of config.ts and the member-or-proxy decision.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseServeArgs, type ServerConfig } from "../config.ts";
import { wantsProxy } from "./index.ts";

async function parse(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServerConfig> {
  const c = await parseServeArgs(args, env, () => undefined);
  assert.ok(c);
  return c;
}

test("the proxy and discovery flags default to etcd's values", async () => {
  const c = await parse([]);
  assert.deepEqual(c.proxy, { mode: "off", failureWaitMs: 5000, refreshIntervalMs: 30000, dialTimeoutMs: 1000, writeTimeoutMs: 5000, readTimeoutMs: 0 });
  assert.equal(c.discoverySrv, "");
  assert.equal(c.discoverySrvName, "");
});

test("the proxy flags are read from the command line and from KV_ variables", async () => {
  const c = await parse(["--proxy=readonly", "--proxy-failure-wait", "0", "-proxy-read-timeout=250"], { KV_PROXY_REFRESH_INTERVAL: "700", KV_PROXY_DIAL_TIMEOUT: "10", KV_PROXY_WRITE_TIMEOUT: "20" });
  assert.deepEqual(c.proxy, { mode: "readonly", failureWaitMs: 0, refreshIntervalMs: 700, dialTimeoutMs: 10, writeTimeoutMs: 20, readTimeoutMs: 250 });
  assert.equal((await parse([], { KV_PROXY: "on" })).proxy.mode, "on");
});

const refusals: { name: string; args: string[]; env?: NodeJS.ProcessEnv; error: RegExp }[] = [
  { name: "an unknown proxy mode", args: ["--proxy", "yes"], error: /invalid value "yes" for flag -proxy: valid values are "off", "readonly", "on"/ },
  { name: "a negative proxy time", args: ["--proxy-dial-timeout", "-1"], error: /invalid value "-1" for flag -proxy-dial-timeout: must be a non-negative integer/ },
  { name: "a proxy time that is not a number", args: ["--proxy-read-timeout", "1s"], error: /invalid value "1s" for flag -proxy-read-timeout/ },
  { name: "--discovery-srv with --initial-cluster", args: ["--discovery-srv", "example.com", "--initial-cluster", "default=http://127.0.0.1:2380"], error: /multiple discovery or bootstrap flags are set\. Choose one of "initial-cluster", "discovery" or "discovery-srv"/ },
  { name: "--discovery-srv with KV_INITIAL_CLUSTER", args: ["--discovery-srv", "example.com"], env: { KV_INITIAL_CLUSTER: "default=http://127.0.0.1:2380" }, error: /multiple discovery or bootstrap flags/ },
  { name: "--discovery-srv-name alone", args: ["--discovery-srv-name", "prod"], error: /--discovery-srv-name needs --discovery-srv/ },
  { name: "a member not in --initial-cluster", args: ["--initial-cluster", "other=http://10.0.0.1:2380"], error: /couldn't find local name "default"/ },
];
for (const r of refusals) {
  test(`parseServeArgs refuses ${r.name}`, async () => {
    await assert.rejects(parseServeArgs(r.args, r.env ?? {}, () => undefined), r.error);
  });
}

test("a proxy need not be in --initial-cluster nor advertise client URLs, as etcd's", async () => {
  const c = await parse(["--proxy", "on", "--listen-client-urls", "http://127.0.0.1:23499", "--initial-cluster", "a=http://10.0.0.1:2380,b=http://10.0.0.2:2380"]);
  assert.deepEqual([...c.initialCluster.keys()], ["a", "b"]);
});

test("--discovery-srv leaves this member alone in the initial cluster until DNS fills it", async () => {
  const c = await parse(["--name", "infra0", "--discovery-srv", "example.com", "--discovery-srv-name", "prod"]);
  assert.equal(c.discoverySrv, "example.com");
  assert.equal(c.discoverySrvName, "prod");
  assert.deepEqual([...c.initialCluster], [["infra0", ["http://127.0.0.1:2380"]]]);
});

test("wantsProxy follows the data dir first (member, then proxy) and --proxy for a new one", () => {
  const root = mkdtempSync(join(tmpdir(), "kvctl-proxy-flags-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const off = { mode: "off" } as ServerConfig["proxy"];
  const on = { mode: "on" } as ServerConfig["proxy"];
  const empty = join(root, "empty");
  assert.equal(wantsProxy({ dataDir: empty, proxy: off }), false);
  assert.equal(wantsProxy({ dataDir: empty, proxy: on }), true);
  mkdirSync(join(root, "p", "proxy"), { recursive: true });
  assert.equal(wantsProxy({ dataDir: join(root, "p"), proxy: off }), true);
  mkdirSync(join(root, "m", "member"), { recursive: true });
  assert.equal(wantsProxy({ dataDir: join(root, "m"), proxy: on }), false);
});
