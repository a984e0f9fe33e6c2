import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { test } from "node:test";
import type { Logger } from "./logger.ts";
import { TracePhase, WriteTracer } from "./write-trace.ts";

function setup(every: number): { tracer: WriteTracer; lines: Record<string, unknown>[]; clock: { t: number } } {
  const lines: Record<string, unknown>[] = [];
  const clock = { t: 0 };
  const noop = (): void => {};
  const log: Logger = { debug: noop, warn: noop, error: noop, info: (_msg, fields) => void lines.push(fields ?? {}) };
  return { tracer: new WriteTracer(every, log, () => clock.t), lines, clock };
}

const request = (method: string, url = "/v2/keys/a?x=1"): IncomingMessage => ({ method, url }) as IncomingMessage;
const response = (): ServerResponse & EventEmitter => new EventEmitter() as ServerResponse & EventEmitter;

test("every Nth write is followed from arrival to response, phases in µs in the order they happened", async () => {
  const { tracer, lines, clock } = setup(2);
  const res1 = response();
  tracer.around(request("PUT"), res1, () => tracer.proposed(1)); // the first write is not sampled
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
  res2.emit("finish");
  res1.emit("finish");
  assert.deepEqual(lines, [{ request: "PUT /v2/keys/a", us: { received: 0, proposed: 50, ready: 100, "wal write": 120, fsynced: 400, applied: 450, responded: 500 } }]);
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
