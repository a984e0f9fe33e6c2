// The cluster version as etcd 3.4 reports it, side by side with etcd when it is installed:
// /version says "not_decided" until the leader records one through the log, then the
// recorded one; the etcd_cluster_version gauge has no series before. A fresh member records
// 3.4.0 (one v2 index: its first key gets index 4). A cluster whose third member starts late
// records etcd's minimum, 3.0.0, at the first commit (the late member's version is not
// known), and 3.4.0 once it answers: one v2 index more, and the gauge keeps 3.0 at 0.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { kvctlCommand, rangePort } from "../helpers/etcd.ts";
import { installed } from "../helpers/grpc.ts";
import { agent, http, until } from "../helpers/http.ts";
import { repoRoot } from "../helpers/server.ts";
import { singleMemberFlags, spawnServer, type Spawned } from "../helpers/spawned.ts";

after(() => agent.destroy());

const kinds: Array<"kvctl" | "etcd"> = installed("etcd") ? ["kvctl", "etcd"] : ["kvctl"];

function spawnMember(kind: "kvctl" | "etcd", flags: string[]): Spawned {
  return kind === "etcd" ? spawnServer("etcd", [...flags, "--enable-v2"], repoRoot) : spawnServer(process.execPath, [...kvctlCommand(), "serve", ...flags, "--enable-v2"], repoRoot);
}

/** /version's etcdcluster, undefined while the member does not answer. */
async function clusterVersion(url: string): Promise<string | undefined> {
  try {
    const res = await fetch(`${url}/version`);
    return ((await res.json()) as { etcdcluster: string }).etcdcluster;
  } catch {
    return undefined;
  }
}

async function v2Index(url: string): Promise<number> {
  const h = (await http("GET", `${url}/v2/keys/`)).headers;
  return Number(h["x-kv-index"] ?? h["x-etcd-index"]);
}

/** Whether every member listed has published its client URLs. */
async function membersPublished(url: string): Promise<boolean> {
  const r = await http("GET", `${url}/v2/members`);
  const members = (JSON.parse(r.body) as { members: { clientURLs: string[] }[] }).members;
  return members.length > 0 && members.every((m) => m.clientURLs.length > 0);
}

/** The etcd_cluster_version samples, as `{label} value` lines. */
async function versionGauge(url: string): Promise<string[]> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text.split("\n").filter((l) => l.startsWith("etcd_cluster_version{")).map((l) => l.replace("etcd_cluster_version", ""));
}

test("a fresh member: not_decided until the leader records 3.4.0, which spends one v2 index", { timeout: 60_000 }, async () => {
  const seen = await Promise.all(
    kinds.map(async (kind) => {
      const dir = mkdtempSync(join(tmpdir(), "kvctl-cv-"));
      const url = `http://127.0.0.1:${await rangePort()}`;
      const proc = spawnMember(kind, singleMemberFlags(dir, url, `http://127.0.0.1:${await rangePort()}`));
      after(async () => {
        await proc.stop();
        rmSync(dir, { recursive: true, force: true });
      });
      const versions = new Set<string>();
      await until(async () => {
        const v = await clusterVersion(url);
        if (v !== undefined) versions.add(v);
        return v !== undefined && v !== "not_decided";
      }, 20_000, `${kind} to record a cluster version`);
      // kvctl may record the version before its own publish lands (both follow its
      // election): the index is read once the member is published.
      await until(async () => (await membersPublished(url)) === true, 20_000, `${kind} to publish itself`);
      // Whether "not_decided" is seen depends on how soon the client port answers: etcd's does before the election.
      versions.delete("not_decided");
      return { versions: [...versions], index: await v2Index(url), gauge: await versionGauge(url), version: await (await fetch(`${url}/version`)).json() };
    }),
  );
  for (const [i, s] of seen.entries()) {
    assert.deepEqual({ ...s, version: { ...(s.version as object), kvctl: undefined } }, {
      versions: ["3.4.0"],
      // The member added, its attributes published, the version recorded.
      index: 3,
      gauge: ['{cluster_version="3.4"} 1'],
      version: { etcdserver: "3.4.23", etcdcluster: "3.4.0", kvctl: undefined },
    }, kinds[i]);
  }
});

test("three members, the third started late: 3.0.0 at first, 3.4.0 once it answers", { timeout: 90_000 }, async () => {
  const seen = await Promise.all(
    kinds.map(async (kind) => {
      const ports: Array<{ client: number; peer: number }> = [];
      for (let i = 0; i < 3; i++) ports.push({ client: await rangePort(), peer: await rangePort() });
      const peer = (i: number): string => `http://127.0.0.1:${ports[i]!.peer}`;
      const url = (i: number): string => `http://127.0.0.1:${ports[i]!.client}`;
      const cluster = ["a", "b", "c"].map((n, i) => `${n}=${peer(i)}`).join(",");
      const dirs = [0, 1, 2].map(() => mkdtempSync(join(tmpdir(), "kvctl-cv3-")));
      const procs: Spawned[] = [];
      after(async () => {
        await Promise.all(procs.map((p) => p.stop()));
        for (const d of dirs) rmSync(d, { recursive: true, force: true });
      });
      const start = (i: number): void => {
        const name = ["a", "b", "c"][i]!;
        procs.push(spawnMember(kind, ["--name", name, "--data-dir", dirs[i]!, "--listen-client-urls", url(i), "--advertise-client-urls", url(i),
          "--listen-peer-urls", peer(i), "--initial-advertise-peer-urls", peer(i), "--initial-cluster", cluster, "--initial-cluster-token", `cv-${kind}`]));
      };
      start(0);
      start(1);
      await until(async () => ((await clusterVersion(url(0))) ?? "not_decided") !== "not_decided", 20_000, `${kind}: a version recorded by a and b`);
      const first = { version: await clusterVersion(url(0)), index: await v2Index(url(0)) };
      start(2);
      // etcd's leader looks again every 4 s; the late member publishes its attributes first.
      await until(async () => (await clusterVersion(url(0))) === "3.4.0", 30_000, `${kind}: 3.4.0 once c answers`);
      await until(async () => (await clusterVersion(url(2))) === "3.4.0", 10_000, `${kind}: c applies it too`);
      return { first, final: { index: await v2Index(url(0)), gauge: await versionGauge(url(0)) } };
    }),
  );
  for (const [i, s] of seen.entries()) {
    assert.deepEqual(s, {
      // Three members added, two published, 3.0.0 recorded.
      first: { version: "3.0.0", index: 6 },
      // c published, 3.4.0 recorded.
      final: { index: 8, gauge: ['{cluster_version="3.0"} 0', '{cluster_version="3.4"} 1'] },
    }, kinds[i]);
  }
});
