import assert from "node:assert/strict";
import { test } from "node:test";
import { MemberState, ServerKind, type Cluster, type Member, type StateHash } from "./cluster.ts";
import { checkConvergence, ConvergenceVerdict, describeConvergence } from "./convergence.ts";

/** A stand-in cluster whose members answer GET /hash from `answers` (one array per poll). */
function fakeCluster(answers: Array<Array<StateHash | undefined>>): Pick<Cluster, "members" | "stateHash"> {
  const n = answers[0]!.length;
  const members: Member[] = Array.from({ length: n }, (_, i) => ({
    index: i, name: `m${i}`, clientUrl: "", peerPort: 0, proxyPort: 0, dataDir: "", state: MemberState.running, pid: undefined,
  }));
  const polls = Array.from({ length: n }, () => 0);
  return {
    members,
    stateHash: async (i: number) => {
      const round = Math.min(polls[i]!++, answers.length - 1);
      return answers[round]![i];
    },
  };
}

const h = (appliedIndex: number, hash: string): StateHash => ({ appliedIndex, storeIndex: appliedIndex, hash });

const cases: Array<{ name: string; answers: Array<Array<StateHash | undefined>>; verdict: ConvergenceVerdict }> = [
  { name: "converged when every member reports one index and one hash", answers: [[h(7, "a"), h(7, "a"), h(7, "a")]], verdict: ConvergenceVerdict.converged },
  { name: "converged when a lagging member catches up on a later poll", answers: [[h(7, "a"), h(5, "b"), h(7, "a")], [h(7, "a"), h(7, "a"), h(7, "a")]], verdict: ConvergenceVerdict.converged },
  { name: "diverged when members at the same index report different hashes", answers: [[h(7, "a"), h(7, "a"), h(7, "x")]], verdict: ConvergenceVerdict.diverged },
  { name: "stuck when the indexes never meet before the deadline", answers: [[h(7, "a"), h(5, "b"), h(7, "a")]], verdict: ConvergenceVerdict.stuck },
  { name: "stuck when a member never answers", answers: [[h(7, "a"), undefined, h(7, "a")]], verdict: ConvergenceVerdict.stuck },
];

for (const c of cases) {
  test(`checkConvergence is ${c.name}`, async () => {
    const r = await checkConvergence({ cluster: fakeCluster(c.answers), server: ServerKind.kvctl, phase: "after healing", timeoutMs: 250 });
    assert.equal(r.verdict, c.verdict, describeConvergence(r).join("\n"));
    if (c.verdict !== ConvergenceVerdict.converged) assert.equal(describeConvergence(r).length, 4, "one line per member on failure");
  });
}

test("checkConvergence skips etcd, which has no /hash", async () => {
  const r = await checkConvergence({ cluster: fakeCluster([[undefined]]), server: ServerKind.etcd, phase: "after healing", timeoutMs: 250 });
  assert.equal(r.verdict, ConvergenceVerdict.skipped);
  assert.match(describeConvergence(r)[0]!, /etcd has no GET \/hash/);
});
