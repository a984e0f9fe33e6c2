// Unit tests of lib/member-restart.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ProbeOutcome, renderRestartTable, summarizeRound, type ProbeSample } from "./member-restart.ts";

const { answered, refused, failed } = ProbeOutcome;

test("summarizeRound: the port is taken from the first request not refused, the answer from the earliest end", () => {
  const samples: ProbeSample[] = [
    { startMs: 5, latencyMs: 1, outcome: refused },
    { startMs: 20, latencyMs: 1, outcome: refused },
    // Held by the port until the member served: sent at 250, answered at 700.
    { startMs: 250, latencyMs: 450, outcome: answered },
    // Sent later, answered sooner: the first answer is the earliest end, not the earliest start.
    { startMs: 260, latencyMs: 420, outcome: answered },
    { startMs: 700, latencyMs: 5, outcome: failed },
    { startMs: 990, latencyMs: 10, outcome: answered },
    { startMs: 1000, latencyMs: 3, outcome: answered },
    { startMs: 2500, latencyMs: 3, outcome: refused },
  ];
  const r = summarizeRound(samples, 800, 2100);
  assert.equal(r.acceptMs, 250);
  assert.equal(r.firstAnswerMs, 680);
  assert.equal(r.answeredFirstSecond, 3);
  assert.equal(r.refusedFirstSecond, 2);
  assert.equal(r.msPerAnswerFirstSecond, (450 + 420 + 10) / 3);
  // From the first second on: answered only (a refusal then is not counted as an answer).
  assert.equal(r.answeredAfter, 1);
  assert.equal(r.cpuMsAt1s, 800);
  assert.equal(r.cpuMsAtEnd, 2100);
});

test("summarizeRound: a member that never took a request has no port, answer or latency figures", () => {
  const r = summarizeRound([{ startMs: 1, latencyMs: 0.2, outcome: refused }], null, null);
  assert.equal(r.acceptMs, null);
  assert.equal(r.firstAnswerMs, null);
  assert.equal(r.msPerAnswerFirstSecond, null);
  assert.equal(r.refusedFirstSecond, 1);
});

test("renderRestartTable: one column per server, the median first and every round after it", () => {
  const a = summarizeRound([{ startMs: 100, latencyMs: 50, outcome: answered }], 900, 2400);
  const b = summarizeRound([{ startMs: 300, latencyMs: 50, outcome: answered }], 700, 2000);
  const c = summarizeRound([{ startMs: 60, latencyMs: 20, outcome: answered }], 600, 1600);
  const table = renderRestartTable([
    { server: "kvctl", rounds: [a, b] },
    { server: "etcd", rounds: [c] },
  ]);
  const lines = table.split("\n");
  assert.equal(lines[0], "| restart of one member of three (medians; each round) | kvctl | etcd |");
  assert.equal(lines[1], "| --- | --- | --- |");
  assert.ok(lines.includes("| spawn to the client port taking requests, ms | 200 (100 / 300) | 60 (60) |"), table);
  assert.ok(lines.includes("| member CPU by the probe's end, ms | 2,200 (2,400 / 2,000) | 1,600 (1,600) |"), table);
  assert.ok(lines.includes("| first second: requests refused | 0 (0 / 0) | 0 (0) |"), table);
});
