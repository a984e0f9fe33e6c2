import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { test } from "node:test";
import type { Logger } from "./logger.ts";
import { TracePhase, WriteTracer } from "./write-trace.ts";
import { MessageType, type Message } from "../raft/index.ts";

function setup(every: number): { tracer: WriteTracer; lines: Record<string, unknown>[]; clock: { t: number } } {
  const lines: Record<string, unknown>[] = [];
  const clock = { t: 0 };
  const noop = (): void => {};
  const log: Logger = { debug: noop, warn: noop, error: noop, info: (_msg, fields) => void lines.push(fields ?? {}) };
  return { tracer: new WriteTracer(every, log, () => clock.t), lines, clock };
}

const request = (method: string, url = "/v2/keys/a?x=1"): IncomingMessage => ({ method, url }) as IncomingMessage;
const response = (): ServerResponse & EventEmitter => new EventEmitter() as ServerResponse & EventEmitter;

test("every write is followed, every Nth logged from arrival to response, phases in µs in the order they happened", async () => {
  const { tracer, lines, clock } = setup(2);
  const res1 = response();
  tracer.around(request("PUT"), res1, () => tracer.proposed(1)); // followed, but not the one logged
  tracer.applied(1);
  assert.equal(tracer.active, false);
  const res2 = response();
  clock.t = 10;
  tracer.around(request("PUT"), res2, () => {
    clock.t = 10.05;
    tracer.proposed(2);
  });
  assert.equal(tracer.active, true);
  clock.t = 10.1;
  tracer.phase(TracePhase.ready);
  clock.t = 10.12;
  tracer.phase(TracePhase.walWrite);
  clock.t = 10.4;
  tracer.phase(TracePhase.fsynced);
  clock.t = 10.45;
  tracer.applied(2);
  assert.equal(tracer.active, false);
  clock.t = 10.5;
  res1.emit("finish");
  res2.emit("finish");
  assert.equal(lines.length, 1);
  const { at, ...line } = lines[0]!;
  assert.equal(at, Math.round((performance.timeOrigin + 10) * 1000) / 1000, "the absolute time of its arrival, comparable across members");
  assert.deepEqual(line, { request: "PUT /v2/keys/a", index: undefined, us: { received: 0, proposed: 50, ready: 100, "wal write": 120, fsynced: 400, applied: 450, responded: 500 } });
});

test("reads are never sampled, and a tracer of 0 runs handlers untouched", () => {
  const { tracer, lines } = setup(1);
  let ran = 0;
  tracer.around(request("GET"), response(), () => ran++);
  tracer.around(request("HEAD"), response(), () => ran++);
  assert.equal(ran, 2);
  assert.equal(lines.length, 0);
  const off = setup(0).tracer;
  assert.equal(off.enabled, false);
  off.around(request("PUT"), response(), () => off.proposed(1));
  assert.equal(off.active, false);
});

test("a proposal made outside a traced request is not followed", () => {
  const { tracer } = setup(1);
  tracer.proposed(5);
  assert.equal(tracer.active, false);
});

test("the trace follows the request across awaits into the proposal", async () => {
  const { tracer, lines } = setup(1);
  const res = response();
  await new Promise<void>((resolve) =>
    tracer.around(request("POST", "/v3/kv/put"), res, () => {
      void (async () => {
        await new Promise((r) => setImmediate(r));
        tracer.proposed(9);
        resolve();
      })();
    }),
  );
  assert.equal(tracer.active, true);
  tracer.applied(9);
  res.emit("finish");
  assert.deepEqual(Object.keys((lines[0] as { us: Record<string, number> }).us), ["received", "proposed", "applied", "responded"]);
});

test("withinSync follows a proposal made before the handler's first await, and only that", async () => {
  const { tracer, lines, clock } = setup(1);
  const traced = tracer.begin("PUT", "/v2/keys/a?x=1");
  assert.ok(traced !== undefined);
  const answered = tracer.withinSync(traced, async () => {
    clock.t = 0.02;
    tracer.proposed(11);
    tracer.note("noted before the await");
    await new Promise((r) => setImmediate(r));
    tracer.proposed(12); // after an await: not this request's any more
    tracer.note("noted after the await");
  });
  tracer.proposed(13); // after withinSync returned
  await answered;
  clock.t = 0.1;
  tracer.applied(12);
  tracer.applied(13);
  assert.equal(tracer.active, true, "proposal 11 is followed until applied");
  tracer.applied(11);
  assert.equal(tracer.active, false);
  tracer.end(traced);
  assert.deepEqual((lines[0] as { us: Record<string, number> }).us, { received: 0, proposed: 20, "noted before the await": 20, applied: 100, responded: 100 });
});

test("withinSync restores the outer request when it returns or throws", () => {
  const { tracer } = setup(1);
  const outer = tracer.begin("PUT", "/v2/keys/outer");
  const inner = tracer.begin("PUT", "/v2/keys/inner");
  assert.ok(outer !== undefined && inner !== undefined);
  tracer.withinSync(outer, () => {
    assert.throws(() => tracer.withinSync(inner, () => { throw new Error("handler failed"); }), /handler failed/);
    tracer.proposed(21);
  });
  tracer.proposed(22);
  tracer.applied(21);
  assert.equal(tracer.active, false, "proposal 21 belonged to the outer request, 22 to none");
  assert.equal(outer.has(TracePhase.proposed), true);
  assert.equal(inner.has(TracePhase.proposed), false);
});

const msg = (m: Partial<Message> & Pick<Message, "type">): Message =>
  ({ to: 1, from: 2, term: 1, logTerm: 1, index: 0, commit: 0, reject: false, rejectHint: 0, entries: [], context: new Uint8Array(), ...m }) as Message;

test("a follower follows the appends of an entry whose index is a multiple of N, from its read to its acknowledgement", () => {
  const { tracer, lines, clock } = setup(4);
  const app = (index: number): Message => msg({ type: MessageType.MsgApp, index: index - 1, entries: [{ term: 1, index, type: 0, data: new Uint8Array() }] as Message["entries"] });
  assert.equal(tracer.peerMessages([app(7), msg({ type: MessageType.MsgHeartbeat })], 0), undefined, "index 7 is not sampled, a heartbeat never");
  clock.t = 20.01;
  const traced = tracer.peerMessages([msg({ type: MessageType.MsgApp })], 20) ?? [];
  assert.equal(traced.length, 0, "an append without entries is not counted");
  const sampled = tracer.peerMessages([app(8)], 20);
  assert.equal(sampled?.length, 1);
  clock.t = 20.03;
  tracer.stepped(sampled!);
  assert.equal(tracer.active, true);
  clock.t = 20.05;
  tracer.phase(TracePhase.ready);
  tracer.sentAfterSave();
  assert.equal(lines.length, 0, "an acknowledgement sent before its save (none is) does not end the trace");
  clock.t = 20.1;
  tracer.phase(TracePhase.walWrite);
  clock.t = 20.4;
  tracer.phase(TracePhase.fsynced);
  clock.t = 20.45;
  tracer.sentAfterSave();
  assert.equal(tracer.active, false);
  assert.equal(lines.length, 1);
  const { at, ...line } = lines[0]!;
  assert.equal(at, Math.round((performance.timeOrigin + 20) * 1000) / 1000);
  assert.deepEqual(line, { request: "append from 2", index: 8, us: { received: 0, decoded: 10, stepped: 30, ready: 50, "sent after save": 50, "wal write": 100, fsynced: 400 } });
});

test("a leader's trace gets its entry's index and the time each follower's acknowledgement of it was read", () => {
  const { tracer, lines, clock } = setup(4);
  const res = response();
  tracer.around(request("PUT"), res, () => tracer.proposed(3));
  tracer.entries(12);
  tracer.entries(13); // a later Ready's entries do not move it
  const other = response();
  tracer.around(request("PUT"), other, () => tracer.proposed(4));
  tracer.entries(14);
  tracer.applied(4);
  other.emit("finish");
  assert.equal(lines.length, 0, "index 14 is not a multiple of 4: not logged");
  clock.t = 0.5;
  assert.equal(tracer.peerMessages([msg({ type: MessageType.MsgAppResp, from: 3, index: 11 })], 0.5), undefined, "an acknowledgement below the entry");
  assert.equal(tracer.peerMessages([msg({ type: MessageType.MsgAppResp, from: 3, index: 12, reject: true })], 0.5), undefined, "a rejection");
  const acked = tracer.peerMessages([msg({ type: MessageType.MsgAppResp, from: 3, index: 12 })], 0.5);
  clock.t = 0.6;
  tracer.stepped(acked!);
  tracer.applied(3);
  clock.t = 0.7;
  res.emit("finish");
  const line = lines[0] as { index: number; us: Record<string, number> };
  assert.equal(line.index, 12);
  assert.deepEqual(line.us, { received: 0, proposed: 0, "ack 3 read": 500, "ack stepped": 600, applied: 600, responded: 700 });
});

test("phaseThrough marks only the proposals of the Ready whose entries end at the index (pipelined Readys overlap)", () => {
  const { tracer, lines, clock } = setup(1);
  const res1 = response();
  const res2 = response();
  tracer.around(request("PUT"), res1, () => tracer.proposed(1));
  tracer.entries(5);
  tracer.phase(TracePhase.walWrite);
  clock.t = 0.1;
  tracer.around(request("PUT"), res2, () => tracer.proposed(2));
  tracer.entries(6);
  clock.t = 0.3;
  tracer.phaseThrough(TracePhase.fsynced, 5);
  clock.t = 0.5;
  tracer.phaseThrough(TracePhase.fsynced, 6);
  tracer.applied(1);
  tracer.applied(2);
  res1.emit("finish");
  res2.emit("finish");
  const fsynced = lines.map((l) => (l["us"] as Record<string, number>)["fsynced"]);
  assert.deepEqual(fsynced, [300, 400], "each at its own Ready's fdatasync (offsets from each one's arrival)");
});
