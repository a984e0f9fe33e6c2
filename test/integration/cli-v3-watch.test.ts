// The long-running v3 commands, `kvctl v3 watch` and `kvctl v3 lease keep-alive`, next to
// `ETCDCTL_API=3 etcdctl` on a second server fed the same writes (see
// test/helpers/etcd.ts): same events, same text, same exit.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { ChildProcess } from "node:child_process";
import { collect, gateway, gatewayPut, maskLeases, sameIds, spawnEtcdctl, spawnKvctlV3, startV3Server, type V3Server } from "../helpers/etcd.ts";

const testedKind = process.env["KVCTL_V3_TEST_SERVER"] === "etcd" ? "etcd" : "kvctl";
let ref: V3Server;
let tested: V3Server;

before(async () => {
  [ref, tested] = await Promise.all([startV3Server("etcd"), startV3Server(testedKind)]);
});
after(async () => {
  await Promise.all([ref?.stop(), tested?.stop()]);
});

const both = <T>(f: (url: string) => Promise<T>): Promise<T[]> => Promise.all([f(ref.url), f(tested.url)]);

function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((r) => child.once("exit", (code) => r(code)));
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const done = exited(child);
    child.kill("SIGTERM");
    await done;
  }
}

interface WatchCase {
  name: string;
  /** Key prefix of the case: its history is `<p>1`, `<p>2` (written first, on both servers). */
  p: string;
  /** `{rev}` is the revision of the case's first write. */
  args: string[];
  /** How a value shows in the output: once the last one shows, the output is complete. */
  shows: (p: string, value: string) => string;
}

const plain = (_p: string, v: string): string => `\n${v}\n`;
const watchCases: WatchCase[] = [
  { name: "watch prints history from --rev, then live events", p: "wa", args: ["watch", "wa1", "--rev", "{rev}"], shows: plain },
  { name: "watch --prefix --prev-kv", p: "wb", args: ["watch", "wb", "--prefix", "--prev-kv", "--rev", "{rev}"], shows: plain },
  { name: "watch -w json", p: "wc", args: ["watch", "wc1", "-w", "json", "--rev", "{rev}"], shows: (_p, v) => Buffer.from(v).toString("base64") },
  { name: "watch of a range -w fields", p: "wd", args: ["watch", "wd1", "wd3", "-w", "fields", "--rev", "{rev}"], shows: (_p, v) => `"Value" : "${v}"` },
  { name: "watch --hex", p: "we", args: ["watch", "we1", "--hex", "--rev", "{rev}"], shows: (_p, v) => [...Buffer.from(v)].map((b) => `\\x${b.toString(16)}`).join("") },
  {
    name: "watch runs a command per event",
    p: "wf",
    args: ["watch", "wf1", "--rev", "{rev}", "--", "sh", "-c", 'echo "$ETCD_WATCH_EVENT_TYPE $ETCD_WATCH_KEY=$ETCD_WATCH_VALUE"'],
    shows: (p, v) => `"${p}1"="${v}"`,
  },
];

for (const c of watchCases) {
  test(`kvctl v3 matches etcdctl: ${c.name}`, async () => {
    const k1 = `${c.p}1`;
    const k2 = `${c.p}2`;
    const revs = await both(async (url) => {
      const r = await gateway<{ header?: { revision?: string } }>(url, "/v3/kv/put", { key: Buffer.from(k1).toString("base64"), value: Buffer.from("a").toString("base64") });
      await gatewayPut(url, k2, "b");
      await gatewayPut(url, k1, "c");
      await gateway(url, "/v3/kv/deleterange", { key: Buffer.from(k2).toString("base64") });
      await gatewayPut(url, k1, "history-end");
      return r.header?.revision ?? "0";
    });
    assert.equal(revs[0], revs[1], "both servers are at the same revision");
    const args = c.args.map((a) => a.replace("{rev}", String(revs[0])));
    const k = spawnKvctlV3(tested.url, args);
    const e = spawnEtcdctl(ref.url, args);
    const ko = collect(k);
    const eo = collect(e);
    try {
      const seen = (v: string) => (s: string): boolean => s.includes(c.shows(c.p, v));
      await Promise.all([ko.until(seen("history-end")), eo.until(seen("history-end"))]);
      await both((url) => gatewayPut(url, k1, "live-end"));
      await Promise.all([ko.until(seen("live-end")), eo.until(seen("live-end"))]);
      assert.equal(sameIds(ko.text(), tested, ref), eo.text());
    } finally {
      await Promise.all([stop(k), stop(e)]);
    }
  });
}

test("kvctl v3 matches etcdctl: lease keep-alive renews until the lease is revoked", async () => {
  const ids = await both((url) => gateway<{ ID?: string }>(url, "/v3/lease/grant", { TTL: 3 }));
  const hex = ids.map((r) => BigInt(r.ID ?? "0").toString(16));
  const k = spawnKvctlV3(tested.url, ["lease", "keep-alive", hex[1] ?? ""]);
  const e = spawnEtcdctl(ref.url, ["lease", "keep-alive", hex[0] ?? ""]);
  const ko = collect(k);
  const eo = collect(e);
  try {
    await Promise.all([ko.until((s) => s.includes("keepalived")), eo.until((s) => s.includes("keepalived"))]);
    await Promise.all(ids.map((r, i) => gateway(i === 0 ? ref.url : tested.url, "/v3/lease/revoke", { ID: r.ID })));
    const [kc, ec] = await Promise.all([exited(k), exited(e)]);
    // The number of renewals before the revoke depends on timing: compare one of each line.
    const shape = (s: string): string => [...new Set(maskLeases(s).split("\n"))].join("\n");
    assert.equal(shape(ko.text()), shape(eo.text()));
    assert.equal(kc, ec);
  } finally {
    await Promise.all([stop(k), stop(e)]);
  }
});
