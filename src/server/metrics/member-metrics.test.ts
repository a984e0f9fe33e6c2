// MemberMetrics.attachTransport: the peer links' gauge starts from the links already up.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MemberMetrics, type MemberMetricsHost, type TransportLinks } from "./member-metrics.ts";
import { ServerMetrics } from "./server-metrics.ts";

/** A member as the constructor reads it; the scrape-time levels are never read here. */
function host(metrics: ServerMetrics): MemberMetricsHost {
  return {
    metrics,
    config: { quotaBackendBytes: 0 },
    memberId: 1,
    leaderId: 0,
    isLeader: false,
    commitIndex: 0,
    appliedIndex: 0,
    stats: { leaderChanges: 0 },
    membership: { get: () => undefined, version: () => undefined },
    v3: { revision: 1, compactRevision: 0, range: () => ({ header: undefined, kvs: [], more: false, count: 0 }) },
    watchHub: { size: 0, behind: () => 0 },
    store: { statsJSON: () => ({}), reads: 0 },
    v3auth: { authRevision: 0 },
    v3DbSizes: () => ({ size: 0, inUse: 0 }),
    walWrittenBytes: 0,
  } as unknown as MemberMetricsHost;
}

test("attachTransport counts the links up before it as active (a member's stream accepted while its start() still awaited was 0 until the link went down and up)", () => {
  const server = new ServerMetrics();
  const metrics = new MemberMetrics(host(server), { level: "basic" });
  const t: TransportLinks = { observer: undefined, stats: () => ({ a: {}, b: {} }), activeSince: (id) => (id === 0xa ? 1234 : undefined) };
  metrics.attachTransport(t);
  const active = (remote: string): number => server.activePeers.value({ Local: "1", Remote: remote });
  assert.equal(active("a"), 1, "up before the metrics attached");
  assert.equal(active("b"), 0);
  // From then on the transport's reports keep it.
  assert.ok(t.observer !== undefined);
  t.observer.peerActive(0xb, true);
  t.observer.peerActive(0xa, false);
  assert.equal(active("a"), 0);
  assert.equal(active("b"), 1);
  assert.equal(server.disconnectedPeers.value({ Local: "1", Remote: "a" }), 1);
});
