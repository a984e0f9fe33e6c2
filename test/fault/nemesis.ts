// The fault scheduler: one fault at a time, each undone before the next.
//   kill        → SIGKILL a random member, restart it on its data after 1–3 s;
//   leader-kill → the same for the current leader (a random member if none is found); the
//                 time until a survivor leads is measured (election.ts), and
//                 the dead member stays down at least until then (or until the cap);
//   pause       → SIGSTOP the leader or a random member for 1–3 s, then SIGCONT;
//   partition   → isolate a random member, isolate the leader, or split the cluster into
//                 a majority and a minority, for 2–4 s, then heal.
// Kinds are drawn from a shuffled bag holding each requested kind once, refilled when
// empty, so even a short run injects every kind (a run of k kinds sees each within k
// faults). Between faults it waits 0.5–2 s. The loop ends by `until`, and every wait is bounded.

import type { Rng } from "../linearizability/history-gen.ts";
import { MemberState, sleep, type Cluster } from "./cluster.ts";
import { timeNewLeader, type ElectionTiming } from "./election.ts";

export const FaultKind = { kill: "kill", leaderKill: "leader-kill", pause: "pause", partition: "partition" } as const;
export type FaultKind = (typeof FaultKind)[keyof typeof FaultKind];
export const allFaults: readonly FaultKind[] = Object.values(FaultKind);

export function parseFaults(text: string): FaultKind[] {
  const out: FaultKind[] = [];
  for (const part of text.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    if (!(allFaults as readonly string[]).includes(part)) throw new Error(`Cannot parse faults: unknown fault "${part}" (known: ${allFaults.join(", ")})`);
    out.push(part as FaultKind);
  }
  return out;
}

export interface FaultRecord {
  kind: FaultKind;
  /** What was hit, e.g. "m2", "m0 (leader)", "[m0,m1] | [m2]". */
  target: string;
  /** Milliseconds since the run's origin. */
  start: number;
  end: number;
  /** leader-kill of a member that said it was the leader: how soon a survivor took over. */
  election?: ElectionTiming;
}

export interface NemesisOptions {
  cluster: Cluster;
  faults: readonly FaultKind[];
  rng: Rng;
  /** Date.now() after which no new fault starts. */
  until: number;
  now: () => number;
  signal: AbortSignal;
  log: (line: string) => void;
}

const between = (rng: Rng, lo: number, hi: number): number => lo + rng() * (hi - lo);

/** Fisher–Yates with the run's generator (reproducible from the seed). */
function shuffle<T>(xs: readonly T[], rng: Rng): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export async function runNemesis(opts: NemesisOptions): Promise<FaultRecord[]> {
  const { cluster, rng } = opts;
  const n = cluster.members.length;
  const records: FaultRecord[] = [];
  const bag: FaultKind[] = [];
  const randomMember = (): number => Math.floor(rng() * n);
  const leaderOr = async (): Promise<{ i: number; label: string }> => {
    const l = await cluster.leader();
    if (l !== undefined) return { i: l, label: `m${l} (leader)` };
    const i = randomMember();
    return { i, label: `m${i} (no leader found)` };
  };
  // Fault durations must end before `until` + a little, so the run's length stays bounded.
  const hold = (lo: number, hi: number): number => Math.max(200, Math.min(between(rng, lo, hi), opts.until + 1000 - Date.now()));

  while (!opts.signal.aborted && opts.faults.length > 0) {
    await sleep(between(rng, 500, 2000), opts.signal);
    if (opts.signal.aborted || Date.now() > opts.until - 1500) break;
    if (bag.length === 0) bag.push(...shuffle(opts.faults, rng));
    const kind = bag.pop()!;
    const start = opts.now();
    let target: string;
    let election: ElectionTiming | undefined;
    switch (kind) {
      case FaultKind.kill:
      case FaultKind.leaderKill: {
        const { i, label } = kind === FaultKind.kill ? { i: randomMember(), label: "" } : await leaderOr();
        target = label || `m${i}`;
        opts.log(`fault: ${kind} ${target}`);
        const killedAt = opts.now();
        // Only a real leader's death starts an election; with fewer than 3 members no
        // majority survives one death.
        const measuring =
          kind === FaultKind.leaderKill && label.endsWith("(leader)") && n >= 3
            ? timeNewLeader({ cluster, dead: i, killedAt, capMs: Math.max(5000, 10 * cluster.electionTimeoutMs), now: opts.now, signal: opts.signal })
            : undefined;
        await cluster.stopMember(i, "SIGKILL");
        await sleep(hold(1000, 3000), opts.signal);
        if (measuring !== undefined) {
          election = await measuring;
          opts.log(`new leader ${election.newLeaderMs === undefined ? `not seen within ${election.capMs}` : `after ${election.newLeaderMs.toFixed(0)}`} ms`);
        }
        cluster.startMember(i);
        break;
      }
      case FaultKind.pause: {
        const { i, label } = rng() < 0.5 ? await leaderOr() : { i: randomMember(), label: "" };
        target = label || `m${i}`;
        if (cluster.members[i]!.state !== MemberState.running) continue;
        opts.log(`fault: pause ${target}`);
        cluster.pause(i);
        await sleep(hold(1000, 3000), opts.signal);
        cluster.resume(i);
        break;
      }
      case FaultKind.partition: {
        const r = rng();
        if (r < 0.6 || n < 3) {
          const { i, label } = r < 0.3 ? await leaderOr() : { i: randomMember(), label: "" };
          target = `isolate ${label || `m${i}`}`;
          cluster.network.isolate(i);
        } else {
          const shuffled = shuffle([...Array(n).keys()], rng);
          const minority = shuffled.slice(0, Math.floor(n / 2));
          const majority = shuffled.slice(Math.floor(n / 2));
          target = `[${minority.map((x) => `m${x}`).join(",")}] | [${majority.map((x) => `m${x}`).join(",")}]`;
          cluster.network.split(minority, majority);
        }
        opts.log(`fault: partition ${target}`);
        await sleep(hold(2000, 4000), opts.signal);
        cluster.network.heal();
        break;
      }
    }
    records.push({ kind, target, start, end: opts.now(), ...(election === undefined ? {} : { election }) });
    opts.log(`healed: ${kind} ${target}`);
  }
  return records;
}

/** Undoes every fault: heals the network, resumes paused members, restarts dead ones. */
export function healAll(cluster: Cluster): void {
  cluster.network.heal();
  for (const m of cluster.members) {
    if (m.state === MemberState.paused) cluster.resume(m.index);
    if (m.state === MemberState.stopped) cluster.startMember(m.index);
  }
}
