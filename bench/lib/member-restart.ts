// The restart benchmark's arithmetic (bench/member-restart.ts runs it): what one restart of a
// member looked like to clients that kept asking it, and the table that puts kvctl's
// restarts beside etcd's. Pure: samples in, figures out.
import { median, round } from "./stats.ts";

/** How one request to the restarted member ended. */
export const ProbeOutcome = { answered: "answered", refused: "refused", failed: "failed" } as const;
export type ProbeOutcome = (typeof ProbeOutcome)[keyof typeof ProbeOutcome];

export interface ProbeSample {
  /** When the request was sent, ms after the member's spawn. */
  readonly startMs: number;
  /** How long it took to end (answered, refused or failed). */
  readonly latencyMs: number;
  readonly outcome: ProbeOutcome;
}

export interface RestartRound {
  /** Spawn to the first request the client port took (not refused); null when none was. */
  readonly acceptMs: number | null;
  /** Spawn to the end of the first answered request; null when none was answered. */
  readonly firstAnswerMs: number | null;
  /** Requests sent in the first second that were answered / refused. */
  readonly answeredFirstSecond: number;
  readonly refusedFirstSecond: number;
  /** Mean latency of the first second's answered requests; null when none. */
  readonly msPerAnswerFirstSecond: number | null;
  /** Requests sent from the first second to the end of the probe that were answered. */
  readonly answeredAfter: number;
  /** The member's CPU time (user + system, every thread) by 1 s and by the probe's end. */
  readonly cpuMsAt1s: number | null;
  readonly cpuMsAtEnd: number | null;
}

/** The figures of one restart from the probes' samples and the member's CPU readings. */
export function summarizeRound(samples: readonly ProbeSample[], cpuMsAt1s: number | null, cpuMsAtEnd: number | null): RestartRound {
  let acceptMs: number | null = null;
  let firstAnswerMs: number | null = null;
  let answeredFirstSecond = 0;
  let refusedFirstSecond = 0;
  let answeredLatency = 0;
  let answeredAfter = 0;
  for (const s of samples) {
    if (s.outcome !== ProbeOutcome.refused && (acceptMs === null || s.startMs < acceptMs)) acceptMs = s.startMs;
    if (s.outcome === ProbeOutcome.answered) {
      const end = s.startMs + s.latencyMs;
      if (firstAnswerMs === null || end < firstAnswerMs) firstAnswerMs = end;
    }
    if (s.startMs < 1000) {
      if (s.outcome === ProbeOutcome.answered) {
        answeredFirstSecond++;
        answeredLatency += s.latencyMs;
      } else if (s.outcome === ProbeOutcome.refused) refusedFirstSecond++;
    } else if (s.outcome === ProbeOutcome.answered) answeredAfter++;
  }
  return {
    acceptMs,
    firstAnswerMs,
    answeredFirstSecond,
    refusedFirstSecond,
    msPerAnswerFirstSecond: answeredFirstSecond === 0 ? null : answeredLatency / answeredFirstSecond,
    answeredAfter,
    cpuMsAt1s,
    cpuMsAtEnd,
  };
}

export interface ServerRestarts {
  readonly server: string;
  readonly rounds: readonly RestartRound[];
}

type Figure = (r: RestartRound) => number | null;

const ROWS: readonly { label: string; figure: Figure; digits: number }[] = [
  { label: "spawn to the client port taking requests, ms", figure: (r) => r.acceptMs, digits: 0 },
  { label: "spawn to the first answer, ms", figure: (r) => r.firstAnswerMs, digits: 0 },
  { label: "first second: requests answered", figure: (r) => r.answeredFirstSecond, digits: 0 },
  { label: "first second: requests refused", figure: (r) => r.refusedFirstSecond, digits: 0 },
  { label: "first second: ms per answered request", figure: (r) => r.msPerAnswerFirstSecond, digits: 1 },
  { label: "after the first second: requests answered", figure: (r) => r.answeredAfter, digits: 0 },
  { label: "member CPU by 1 s, ms", figure: (r) => r.cpuMsAt1s, digits: 0 },
  { label: "member CPU by the probe's end, ms", figure: (r) => r.cpuMsAtEnd, digits: 0 },
];

function cell(x: number | null, digits: number): string {
  return x === null ? "-" : round(x, digits).toLocaleString("en-US");
}

/** One Markdown table: a row per figure, a column per server (medians of its rounds, then each round's figure). */
export function renderRestartTable(results: readonly ServerRestarts[]): string {
  const head = `| restart of one member of three (medians; each round) | ${results.map((r) => r.server).join(" | ")} |`;
  const rule = `| --- | ${results.map(() => "---").join(" | ")} |`;
  const rows = ROWS.map(({ label, figure, digits }) => {
    const cells = results.map((r) => {
      const xs = r.rounds.map(figure);
      return `${cell(median(xs), digits)} (${xs.map((x) => cell(x, digits)).join(" / ")})`;
    });
    return `| ${label} | ${cells.join(" | ")} |`;
  });
  return [head, rule, ...rows].join("\n");
}
