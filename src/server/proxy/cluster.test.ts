import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgent } from "../../transport/index.ts";
import { silentLogger } from "../logger.ts";
import { clusterFile, clusterFromPeers, parseMembers, readClusterFile, writeClusterFile } from "./cluster.ts";
import { portPicker } from "./ports.test-helper.ts";

const reservedPort = portPicker(23403, 23404);

test("parseMembers reads kvctl's and etcd's member lists, sorted", () => {
  const kv = JSON.stringify({ clusterId: 1, members: [
    { id: 2, name: "b", peerUrls: ["http://b:2380"], clientUrls: ["http://b:2379"] },
    { id: 1, name: "a", peerUrls: ["http://a:2380"], clientUrls: [] },
  ] });
  assert.deepEqual(parseMembers(kv), { peerUrls: ["http://a:2380", "http://b:2380"], clientUrls: ["http://b:2379"] });
  const etcd = JSON.stringify([{ id: "1", name: "x", peerURLs: ["http://x:2380"], clientURLs: ["http://x:2379", "http://x:4001"] }]);
  assert.deepEqual(parseMembers(etcd), { peerUrls: ["http://x:2380"], clientUrls: ["http://x:2379", "http://x:4001"] });
  assert.throws(() => parseMembers("{}"), /Cannot parse the member list/);
});

test("the cluster file round-trips in etcd's format and is absent at first", async () => {
  const dir = mkdtempSync(join(tmpdir(), "kvctl-proxy-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  assert.equal(await readClusterFile(dir), undefined);
  await writeClusterFile(dir, ["http://a:2380", "http://b:2380"]);
  assert.equal(readFileSync(clusterFile(dir), "utf8"), '{"PeerURLs":["http://a:2380","http://b:2380"]}');
  assert.equal(existsSync(`${clusterFile(dir)}.bak`), false);
  assert.deepEqual(await readClusterFile(dir), ["http://a:2380", "http://b:2380"]);
});

test("clusterFromPeers asks the next peer when one is down and gives up when none answers", async () => {
  const down = await reservedPort();
  const upPort = await reservedPort();
  const server = createServer((req, res) => {
    assert.equal(req.url, "/members");
    res.end(JSON.stringify({ clusterId: 1, members: [{ id: 1, name: "a", peerUrls: [`http://127.0.0.1:${upPort}`], clientUrls: ["http://127.0.0.1:1"] }] }));
  });
  await new Promise<void>((r) => server.listen(upPort, "127.0.0.1", r));
  after(() => server.close());
  const agent = createAgent({ keepAlive: false });
  const agents = { http: agent, https: agent };
  const view = await clusterFromPeers({ peerUrls: [`http://127.0.0.1:${down}`, `http://127.0.0.1:${upPort}`], agents, timeoutMs: 2000, log: silentLogger });
  assert.deepEqual(view, { peerUrls: [`http://127.0.0.1:${upPort}`], clientUrls: ["http://127.0.0.1:1"] });
  assert.equal(await clusterFromPeers({ peerUrls: [`http://127.0.0.1:${down}`], agents, timeoutMs: 2000, log: silentLogger }), undefined);
});
