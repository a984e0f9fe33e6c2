// A member serves clients only once it published itself to the cluster, as etcd's client
// listeners wait for its ReadyNotify: the first member of a two-member cluster, alone (no
// quorum, so no publish), holds client connections unanswered, /version and /health too,
// while its peer port answers; once the second member starts, both serve. etcd 3.4.23 does
// the same (curl times out on every client path; etcdctl: context deadline exceeded).
// KVCTL_TEST_SERVER=etcd runs it against etcd.

import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, kvctlBin, repoRoot } from "../helpers/server.ts";
import { spawnServer, type Spawned } from "../helpers/spawned.ts";
import { waitHealthy } from "../helpers/http.ts";
import { whenOutput } from "../helpers/run-process.ts";
import { until } from "../../src/until.test-helper.ts";

const root = mkdtempSync(join(tmpdir(), "kvctl-publish-"));
const started: Spawned[] = [];
after(async () => {
  await Promise.all(started.map((s) => s.stop()));
  rmSync(root, { recursive: true, force: true });
});

/** The client's answer, or "held" when none came within `ms`. */
async function answer(url: string, ms: number): Promise<number | "held"> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(ms) })).status;
  } catch (err) {
    if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) return "held";
    throw err;
  }
}

test("a member that has not published holds client requests; its peer port answers; both serve once a quorum publishes them", async () => {
  const ports = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const [c1, p1, c2, p2] = ports.map((p) => `http://127.0.0.1:${p}`) as [string, string, string, string];
  const cluster = `m1=${p1},m2=${p2}`;
  const etcd = process.env["KVCTL_TEST_SERVER"] === "etcd";
  const start = (name: string, client: string, peer: string): Spawned => {
    const flags = ["--name", name, "--data-dir", join(root, name), "--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster, "--initial-cluster-token", "publish"];
    const s = etcd ? spawnServer("etcd", ["--enable-v2=true", ...flags], root) : spawnServer(process.execPath, [kvctlBin, "serve", ...flags], repoRoot);
    started.push(s);
    return s;
  };
  const m1 = start("m1", c1, p1);
  // The peer port answers first (members find each other through it).
  await until(async () => (await answer(`${p1}/members`, 500)) === 200, "m1's peer port to answer", 10_000, { intervalMs: 100, ignoreErrors: true, detail: m1.log });
  const held = await Promise.all(["/version", "/health", "/v2/keys"].map((p) => answer(`${c1}${p}`, 1500)));
  assert.deepEqual(held, ["held", "held", "held"], "nothing answered before the member published itself");
  // A request held meanwhile is answered once the member serves.
  const waiting = answer(`${c1}/version`, 20_000);
  const m2 = start("m2", c2, p2);
  await waitHealthy(c1, { child: m1.child, log: m1.log, timeoutMs: 20_000 });
  await waitHealthy(c2, { child: m2.child, log: m2.log, timeoutMs: 20_000 });
  assert.equal(await waiting, 200);
});

test("a member stopped before it published exits 0 (its publish, waiting for a leader, ends with the stop)", { skip: process.env["KVCTL_TEST_SERVER"] === "etcd" && "kvctl's exit only" }, async () => {
  const [c, p, other] = await Promise.all([freePort(), freePort(), freePort()]);
  const flags = ["--name", "lone", "--data-dir", join(root, "lone"), "--listen-client-urls", `http://127.0.0.1:${c}`, "--advertise-client-urls", `http://127.0.0.1:${c}`, "--listen-peer-urls", `http://127.0.0.1:${p}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${p}`, "--initial-cluster", `lone=http://127.0.0.1:${p},gone=http://127.0.0.1:${other}`];
  const s = spawnServer(process.execPath, [kvctlBin, "serve", ...flags], repoRoot);
  started.push(s);
  // It campaigns (alone: no leader, so its publish proposal waits for one) before the stop.
  await whenOutput(s.child, () => /became pre-candidate|became candidate/.test(s.log()), 10_000, () => `no campaign in its log:\n${s.log()}`);
  const exited = new Promise<number | null>((resolve) => s.child.once("exit", (code) => resolve(code)));
  s.child.kill("SIGTERM");
  assert.equal(await exited, 0, s.log());
  assert.doesNotMatch(s.log(), /server stopped\n\s+at /, s.log());
});
