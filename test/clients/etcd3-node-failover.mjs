#!/usr/bin/env node
// npm `etcd3` 1.1 against a three-member cluster whose leader is killed mid-way, with the
// client's default fault handling (retries, per-host circuit breakers) and all three
// hosts: what an application sees across the failover. One normalised line per step;
// what depends on timing (which host the client used, how many tries a write took, which
// member led) is not printed, only what must hold.
//
// Usage: node etcd3-node-failover.mjs --hosts H1,H2,H3 --pids P1,P2,P3 [--modules DIR]
//   (host:port of each member and its process id, in the same order: the scenario finds
//   the leader and SIGKILLs it). Exit status 0 unless the scenario itself broke.
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";

const { values: opts } = parseArgs({ options: { hosts: { type: "string" }, pids: { type: "string" }, modules: { type: "string" } } });
const modules = opts.modules ?? process.env.KVCTL_NPM_CLIENTS ?? "/tmp/rc-npm/node_modules";
const require = createRequire(join(modules, "noop.js"));
const { Etcd3 } = require("etcd3");

const hosts = opts.hosts.split(",");
const pids = opts.pids.split(",").map(Number);
const out = (name, text) => process.stdout.write(`${name}: ${text}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const describeError = (e) => `ERR ${e?.constructor?.name}: ${String(e?.message ?? e)}`;

/** Tries `fn` until it succeeds or `ms` passed: an election takes a moment. */
async function eventually(fn, ms = 15_000) {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (e) {
      if (Date.now() > until) throw e;
      await sleep(200);
    }
  }
}

async function leaderIndex() {
  for (let i = 0; i < hosts.length; i++) {
    const one = new Etcd3({ hosts: hosts[i] });
    try {
      const s = await one.maintenance.status();
      if (s.leader === s.header.member_id) return i;
    } catch {
      // not answering
    } finally {
      one.close();
    }
  }
  return -1;
}

async function main() {
  const client = new Etcd3({ hosts });
  await eventually(() => client.put("ready").value("1").exec(), 30_000);
  const leader = await eventually(async () => {
    const i = await leaderIndex();
    if (i < 0) throw new Error("no leader yet");
    return i;
  });
  out("before", `members=${(await client.cluster.memberList({})).members.length} leader found=yes`);

  const events = [];
  const watcher = await client.watch().prefix("f/").create();
  watcher.on("put", (kv) => events.push(`put ${kv.key.toString()}=${kv.value.toString()}`));
  watcher.on("delete", (kv) => events.push(`delete ${kv.key.toString()}`));
  const lease = client.lease(3);
  let lost = "no";
  lease.on("lost", () => (lost = "yes"));
  await lease.put("f/leased").value("held").exec();
  const held = await client.lock("f-lock").ttl(3).acquire();
  const campaign = client.election("f-elect", 3).campaign("one");
  await campaign.wait();
  await client.put("f/0").value("before").exec();

  process.kill(pids[leader], "SIGKILL");
  out("leader killed", "yes");

  for (let i = 1; i <= 5; i++) {
    await eventually(() => client.put(`f/${i}`).value(String(i)).exec()).then(
      () => out(`put f/${i} after the kill`, "ok"),
      (e) => out(`put f/${i} after the kill`, describeError(e)),
    );
  }
  await eventually(() => client.delete().key("f/0").exec()).then(
    () => out("delete f/0", "ok"),
    (e) => out("delete f/0", describeError(e)),
  );
  out("get f/ (linearizable)", JSON.stringify(await eventually(() => client.getAll().prefix("f/").strings())));
  // The watch sees every write, across a reconnection if its stream was on the dead member.
  await eventually(async () => {
    if (events.length < 8) throw new Error(`watch saw ${events.length}`);
  });
  out("watch events", events.join("; "));
  // 3 s leases, kept alive through the election: a new leader extends them (etcd: by the
  // election timeout), keepalives reach it.
  await sleep(5000);
  out("lease key after 5 s", `${await eventually(() => client.get("f/leased").string())} lost=${lost}`);
  out("lock still held", String((await eventually(() => client.getAll().prefix("f-lock").keys())).length === 1));
  out("election leader", String(await eventually(() => client.election("f-elect").leader())));
  await eventually(() => held.release()).then(
    () => out("lock release", "ok"),
    (e) => out("lock release", describeError(e)),
  );
  const again = await eventually(() => client.lock("f-lock").ttl(3).acquire()).then(
    (l) => l.release().then(() => "ok"),
    describeError,
  );
  out("lock acquire again", again);
  await eventually(() => campaign.resign());
  out("election after resign", String(await client.election("f-elect").leader()));
  await eventually(() => lease.revoke());
  out("lease revoked, key", String(await client.get("f/leased").string()));
  const members = await eventually(() => client.cluster.memberList({}));
  out("members after", `${members.members.length}`);
  await watcher.cancel().catch(() => {});
  client.close();
}

process.on("beforeExit", () => {
  process.stderr.write("scenario broke: the event loop emptied before the end\n");
  process.exit(1);
});
main().then(
  () => {
    process.stdout.write("## end\n");
    process.exit(0);
  },
  (e) => {
    process.stderr.write(`scenario broke: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
