// The peer link families of etcd 3.4's rafthttp on a three-member `kvctl serve` cluster,
// before and after a follower is killed and once it is back, as a three-member etcd 3.4.23
// (heartbeat 50 ms) showed them:
// - etcd_network_active_peers{Local,Remote}: 1 for each link once up; 0 for the dead
//   member on both others; 1 again once it is back;
// - etcd_network_disconnected_peers_total{Local,Remote}: 1 on both others for the dead
//   member (once, however long it stays down), nothing for the live links;
//   A member counts its own links too when it starts after its peers (they may answer its
//   streams before its metrics attach);
// - etcd_network_peer_sent_failures_total{To}: the leader's messages to the dead member
//   (etcd: 57 after 3 s, ~20 a second, its heartbeats), none on the other follower, which
//   has nothing to say to it (etcd: 0).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { startCluster, type ClusterMember, type TestCluster } from "../helpers/cluster.ts";
import { until } from "../helpers/http.ts";
import { eventually } from "../../src/until.test-helper.ts";
import { parseExposition, type ParsedFamily } from "../helpers/prometheus.ts";

let cluster: TestCluster;
before(async () => {
  cluster = await startCluster(3);
});
after(() => cluster?.stop());

async function scrape(m: ClusterMember): Promise<Map<string, ParsedFamily>> {
  const res = await fetch(`${m.clientUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
  assert.equal(res.status, 200);
  return parseExposition(await res.text());
}

/** A sample's value, 0 when the series is not there (as for a Go vector with no child yet). */
function value(families: Map<string, ParsedFamily>, family: string, labels: Record<string, string>): number {
  const s = families.get(family)?.samples.find((x) => Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value ?? 0;
}

const idOf = async (m: ClusterMember): Promise<string> => (await scrape(m)).get("etcd_server_id")!.samples[0]!.labels["server_id"]!;

test("a killed follower: inactive and disconnected once on both members, the leader's sends to it counted failed", async () => {
  const leader = await eventually(() => cluster.leader(), "a leader", 10_000);
  const [victim, other] = cluster.members.filter((m) => m !== leader) as [ClusterMember, ClusterMember];
  const ids = new Map<ClusterMember, string>();
  for (const m of cluster.members) ids.set(m, await idOf(m));
  const id = (m: ClusterMember): string => ids.get(m)!;
  const active = (f: Map<string, ParsedFamily>, local: ClusterMember, remote: ClusterMember): number =>
    value(f, "etcd_network_active_peers", { Local: id(local), Remote: id(remote) });
  const disconnected = (f: Map<string, ParsedFamily>, local: ClusterMember, remote: ClusterMember): number =>
    value(f, "etcd_network_disconnected_peers_total", { Local: id(local), Remote: id(remote) });
  const sentFailures = (f: Map<string, ParsedFamily>, to: ClusterMember): number => value(f, "etcd_network_peer_sent_failures_total", { To: id(to) });

  // Every link up, on every member.
  await until(async () => {
    for (const m of cluster.members) {
      const f = await scrape(m);
      for (const r of cluster.members) if (r !== m && active(f, m, r) !== 1) return false;
    }
    return true;
  }, 10_000, "all six links active");
  const l0 = await scrape(leader);
  assert.equal(l0.get("etcd_network_active_peers")?.type, "gauge");
  assert.equal(disconnected(l0, leader, victim), 0);
  const otherFailuresBefore = sentFailures(await scrape(other), victim);

  await cluster.kill(victim);
  await until(async () => active(await scrape(leader), leader, victim) === 0 && active(await scrape(other), other, victim) === 0, 10_000, "the dead link inactive on both");
  // Heartbeats go out every 50 ms: the leader's to the dead member are lost.
  await until(async () => sentFailures(await scrape(leader), victim) >= 20, 10_000, "the leader's lost heartbeats counted");
  const l = await scrape(leader);
  const o = await scrape(other);
  assert.equal(l.get("etcd_network_disconnected_peers_total")?.type, "counter");
  assert.equal(l.get("etcd_network_peer_sent_failures_total")?.type, "counter");
  assert.equal(disconnected(l, leader, victim), 1, "disconnected once, however many dials fail");
  assert.equal(disconnected(o, other, victim), 1);
  assert.equal(disconnected(l, leader, other), 0, "a live link was never down");
  assert.equal(active(l, leader, other), 1);
  assert.equal(sentFailures(l, other), 0, "nothing lost to the live follower");
  // The other follower sends nothing to a follower: re-dialling it is no send failure.
  assert.equal(sentFailures(o, victim), otherFailuresBefore, "the other follower lost nothing");

  await cluster.start(victim);
  await until(async () => active(await scrape(leader), leader, victim) === 1 && active(await scrape(other), other, victim) === 1, 15_000, "the link active again");
  // The member back started after its peers: their answers to its streams can come while
  // its start() still awaits, before the metrics attach; they count all the same.
  await until(async () => {
    const f = await scrape(victim);
    return active(f, victim, leader) === 1 && active(f, victim, other) === 1;
  }, 10_000, "the member back counts its own links active");
  const back = await scrape(leader);
  assert.equal(disconnected(back, leader, victim), 1, "coming back is no disconnection");
  // Once it answers, nothing more is lost: five more heartbeat round trips, no more failures.
  const rtt = (f: Map<string, ParsedFamily>): number =>
    f.get("etcd_network_peer_round_trip_time_seconds")?.samples.find((x) => x.name.endsWith("_count") && x.labels["To"] === id(victim))?.value ?? 0;
  const stopped = sentFailures(back, victim);
  const trips = rtt(back);
  await until(async () => rtt(await scrape(leader)) >= trips + 5, 10_000, "five round trips to the member back");
  assert.equal(sentFailures(await scrape(leader), victim), stopped, "no failures once the member is back");
});
