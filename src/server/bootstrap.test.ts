import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseServeArgs } from "./config.ts";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { PEER_MEMBERS_PATH, PeerUrlsMismatchError, bootstrappedElsewhere, openMember, validateAgainstExisting, encodeConfState, resolvedUrls, v3AuthOptions, type SnapshotImage } from "./bootstrap.ts";
import { Membership } from "./membership.ts";
import { createLogger } from "./logger.ts";
import { V2Store } from "../store/v2/store.ts";
import { V2AuthState, V3AuthState } from "../auth/index.ts";

test("a restart after a crash mid snapshot install (snapshot saved, hard state not) starts from the snapshot", async () => {
  const dir = await mkdtemp(join(tmpdir(), "kvctl-bootstrap-"));
  try {
    const config = await parseServeArgs(["--data-dir", dir, "--name", "m"], {}, () => undefined);
    assert.ok(config);
    const lines: string[] = [];
    const log = createLogger("info", (l) => void lines.push(l));
    const first = await openMember(config, log);
    const entries = [1, 2, 3].map((index) => ({ term: 1, index, type: 0, data: new Uint8Array() }));
    await first.wal.save({ term: 1, vote: 0, commit: 2 }, entries);
    // The leader's snapshot at 10 reached the disk (file + WAL ref); the hard state with
    // commit 10 that follows it in the same Ready did not.
    const image: SnapshotImage = { store: new V2Store().save(), membership: first.membership.toJSON(), auth: new V2AuthState().save() };
    const confState = { voters: [first.memberId], learners: [] };
    await first.snapshotter.save({ index: 10, term: 1, data: Buffer.from(JSON.stringify(image)), meta: encodeConfState(confState) });
    await first.wal.saveSnapshotRef({ index: 10, term: 1 });
    await first.wal.close();

    const again = await openMember(config, log);
    assert.equal(again.appliedIndex, 10);
    assert.equal(again.storage.initialState().hardState.commit, 10, "commit raised to the snapshot index");
    assert.ok(lines.some((l) => l.includes("raised the WAL commit index")), "the repair is logged");
    await again.wal.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("--auth-token-ttl sets the simple tokens' idle lifetime; 0 is etcd's 300 s", () => {
  assert.deepEqual(v3AuthOptions({ authTokenTtl: 300 }), { tokenTtlMs: 300_000 });
  assert.deepEqual(v3AuthOptions({ authTokenTtl: 2 }), { tokenTtlMs: 2000 });
  assert.deepEqual(v3AuthOptions({ authTokenTtl: 0 }), { tokenTtlMs: 300_000 });
});

test("--auth-token-ttl reaches the token table of a new member and of one restarted from a snapshot", async () => {
  const dir = await mkdtemp(join(tmpdir(), "kvctl-bootstrap-"));
  try {
    const log = createLogger("error", () => undefined);
    const fresh = await parseServeArgs(["--data-dir", dir, "--name", "m", "--auth-token-ttl", "7"], {}, () => undefined);
    assert.ok(fresh);
    const first = await openMember(fresh, log);
    assert.equal(first.v3auth.tokens.ttlMs, 7000);
    const image: SnapshotImage = { store: new V2Store().save(), membership: first.membership.toJSON(), v3auth: new V3AuthState().toImage() };
    await first.snapshotter.save({ index: 1, term: 1, data: Buffer.from(JSON.stringify(image)), meta: encodeConfState({ voters: [first.memberId], learners: [] }) });
    await first.wal.save({ term: 1, vote: 0, commit: 1 }, [{ term: 1, index: 1, type: 0, data: new Uint8Array() }]);
    await first.wal.saveSnapshotRef({ index: 1, term: 1 });
    await first.wal.close();
    await first.v3db.close();
    const restarted = await parseServeArgs(["--data-dir", dir, "--name", "m", "--auth-token-ttl", "11"], {}, () => undefined);
    assert.ok(restarted);
    const again = await openMember(restarted, log);
    assert.equal(again.appliedIndex, 1, "restarted from the snapshot");
    assert.equal(again.v3auth.tokens.ttlMs, 11_000);
    await again.wal.close();
    await again.v3db.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a member's URLs match however the host is spelled: localhost resolves to the loopback address", async () => {
  const byName = await resolvedUrls(["http://localhost:2380"]);
  const byIp = await resolvedUrls(["http://127.0.0.1:2380"]);
  assert.ok([...byName].some((u) => byIp.has(u)), `${[...byName].join(",")} vs ${[...byIp].join(",")}`);
  const otherPort = await resolvedUrls(["http://127.0.0.1:2381"]);
  assert.ok(![...otherPort].some((u) => byIp.has(u)), "another port is another member");
  // An unresolvable host still matches itself as written.
  assert.ok((await resolvedUrls(["http://no-such-host.invalid:1"])).has("http://no-such-host.invalid:1/"));
});

test("a member started new whose id a peer lists with client URLs was bootstrapped before (etcd's isMemberBootstrapped)", async () => {
  const cluster = new Map([
    ["a", ["http://127.0.0.1:2380"]],
    ["b", ["http://127.0.0.1:2381"]],
  ]);
  const members = Membership.bootstrap(cluster, "tok").list();
  const a = members.find((m) => m.name === "a")!;
  let listed = members.map((m) => ({ ...m, clientUrls: m.name === "a" ? ["http://127.0.0.1:2379"] : [] }));
  const peer = createServer((req, res) => {
    if (req.url !== PEER_MEMBERS_PATH) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ clusterId: 1, members: listed }));
  });
  await new Promise<void>((r) => peer.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(peer.address() as AddressInfo).port}`;
  try {
    assert.equal(await bootstrappedElsewhere(a.id, [url]), true, "published: ran before");
    assert.equal(await bootstrappedElsewhere(a.id + 1, [url]), false, "another id (another token): no evidence");
    listed = listed.map((m) => ({ ...m, clientUrls: [] }));
    assert.equal(await bootstrappedElsewhere(a.id, [url]), false, "listed but never published: a cluster starting together");
    assert.equal(await bootstrappedElsewhere(a.id, ["http://127.0.0.1:1"]), false, "no answer: no evidence");
    listed = listed.map((m) => ({ ...m, clientUrls: ["http://x:1"] }));
    assert.equal(await bootstrappedElsewhere(a.id, ["http://127.0.0.1:1", url]), true, "the next peer is asked");
  } finally {
    await new Promise((r) => peer.close(r));
  }
});

test("joining with existing: --initial-cluster must match the cluster's members (etcd's ValidateClusterAndAssignIDs)", async () => {
  const running = new Map([
    ["m1", ["http://127.0.0.1:2380"]],
    ["m4", ["http://127.0.0.1:2384"]],
  ]);
  const existing = Membership.bootstrap(running, "tok");
  // The same members, localhost for 127.0.0.1 and another order: the same.
  await validateAgainstExisting(new Map([["m4", ["http://127.0.0.1:2384"]], ["m1", ["http://localhost:2380"]]]), existing);
  await assert.rejects(validateAgainstExisting(new Map([...running, ["m5", ["http://127.0.0.1:2385"]]]), existing), (err: unknown) => err instanceof PeerUrlsMismatchError && /^error validating peerURLs \{ClusterID:[0-9a-f]+ Members:\[.*\]\}: member count is unequal$/.test(err.message));
  await assert.rejects(validateAgainstExisting(new Map([["m1", ["http://127.0.0.1:2380"]], ["m4", ["http://127.0.0.1:2399"]]]), existing), (err: unknown) => err instanceof PeerUrlsMismatchError && err.message.includes("PeerURLs: no match found for existing member ("));
});
