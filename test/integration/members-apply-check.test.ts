// Membership changes checked when applied, side by side with etcd 3.4 when it is installed:
// two removals of one member sent at once both reach the log; one succeeds, and the other
// is refused when applied (410 Member permanently removed) or, when it reached the leader
// while the first was still unapplied, dropped by Raft and answered when the request times
// out (500 Internal Server Error after 7 s). Either way it spends a Raft index and no v2
// index. A removal sent after both, and an add of a peer URL a member has, are refused when
// applied: a Raft index, no v2 index.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { installed, startGrpcServer, waitGrpcReady, type GrpcTestServer } from "../helpers/grpc.ts";
import { agent, http } from "../helpers/http.ts";

after(() => agent.destroy());

const haveEtcd = installed("etcd");

async function indexes(url: string): Promise<{ v2: number; raft: number }> {
  const h = (await http("GET", `${url}/v2/keys/`)).headers;
  return { v2: Number(h["x-kv-index"] ?? h["x-etcd-index"]), raft: Number(h["x-raft-index"]) };
}

async function members(url: string, method: "DELETE" | "POST", path: string, body?: unknown): Promise<[number, string]> {
  const init = body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } };
  const res = await fetch(`${url}/v2/members${path}`, { method, ...init });
  return [res.status, (await res.text()).trim()];
}

/** Adds a learner through the gateway (it never starts and needs no quorum); its id in hex. */
async function addLearner(url: string, peerUrl: string): Promise<string> {
  const res = await fetch(`${url}/v3/cluster/member/add`, { method: "POST", body: JSON.stringify({ peerURLs: [peerUrl], isLearner: true }) });
  const body = (await res.json()) as { member: { ID: string } };
  assert.equal(res.status, 200, JSON.stringify(body));
  return BigInt(body.member.ID).toString(16);
}

interface Seen {
  concurrent: { answers: string[]; spent: { v2: number; raft: number } };
  again: { answer: [number, string]; spent: { v2: number; raft: number } };
  takenUrl: { answer: [number, string]; spent: { v2: number; raft: number } };
}

async function run(s: GrpcTestServer): Promise<Seen> {
  const hex = await addLearner(s.url, "http://127.0.0.1:2");
  const before = await indexes(s.url);
  const pair = await Promise.all([members(s.url, "DELETE", `/${hex}`), members(s.url, "DELETE", `/${hex}`)]);
  const afterPair = await indexes(s.url);
  const again = await members(s.url, "DELETE", `/${hex}`);
  const afterAgain = await indexes(s.url);
  const own = ((await (await fetch(`${s.url}/v2/members`)).json()) as { members: Array<{ peerURLs: string[] }> }).members[0]!.peerURLs[0]!;
  const taken = await members(s.url, "POST", "", { peerURLs: [own] });
  const afterTaken = await indexes(s.url);
  const named = (t: string): string => t.replaceAll(hex, "<id>");
  const diff = (x: { v2: number; raft: number }, y: { v2: number; raft: number }): { v2: number; raft: number } => ({ v2: y.v2 - x.v2, raft: y.raft - x.raft });
  return {
    concurrent: { answers: pair.map(([status, text]) => `${status} ${named(text)}`).sort(), spent: diff(before, afterPair) },
    again: { answer: [again[0], named(again[1])], spent: diff(afterPair, afterAgain) },
    takenUrl: { answer: taken, spent: diff(afterAgain, afterTaken) },
  };
}

test("two removals of one member at once: one applied, the other refused as etcd 3.4 refuses it", { timeout: 60_000 }, async () => {
  const kinds: Array<"kvctl" | "etcd"> = haveEtcd ? ["kvctl", "etcd"] : ["kvctl"];
  const servers = await Promise.all(kinds.map((k) => startGrpcServer(k, ["--enable-v2"])));
  after(() => Promise.all(servers.map((s) => s.stop())));
  await Promise.all(servers.map((s) => waitGrpcReady(s)));
  const seen = await Promise.all(servers.map((s) => run(s)));
  for (const [i, got] of seen.entries()) {
    const who = kinds[i]!;
    const [first, second] = got.concurrent.answers;
    assert.equal(first, "204 ", `${who}: one removal is applied`);
    // Which of etcd's two answers depends on when the second reached the leader.
    assert.ok(
      second === '410 {"message":"Member permanently removed: <id>"}' || second === '500 {"message":"Internal Server Error"}',
      `${who}: the other is refused at apply, or dropped by Raft and timed out: ${second}`,
    );
    assert.deepEqual(got.concurrent.spent, { v2: 2, raft: 2 }, `${who}: the removal spends two v2 indexes, the refused change none`);
    assert.deepEqual(got.again, { answer: [410, '{"message":"Member permanently removed: <id>"}'], spent: { v2: 0, raft: 1 } }, who);
    assert.deepEqual(got.takenUrl, { answer: [409, '{"message":"membership: peerURL exists"}'], spent: { v2: 0, raft: 1 } }, who);
  }
  if (seen[1] !== undefined) assert.deepEqual({ ...seen[0], concurrent: seen[0]!.concurrent.spent }, { ...seen[1], concurrent: seen[1].concurrent.spent }, "etcd 3.4 answers the same");
});
