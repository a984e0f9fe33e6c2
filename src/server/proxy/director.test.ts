import { test } from "node:test";
import assert from "node:assert/strict";
import { silentLogger } from "../logger.ts";
import { Director } from "./director.ts";

/** A director on a hand-driven clock; random 0.999 keeps each element in place (no swap). */
function director(random = (): number => 0.999): { d: Director; clock: { now: number } } {
  const clock = { now: 1000 };
  return { d: new Director({ failureWaitMs: 500, log: silentLogger, now: () => clock.now, random }), clock };
}

test("Director keeps each URL once, as an origin, and drops invalid ones", () => {
  const { d } = director();
  d.setUrls(["http://a:1", "http://a:1/", "not a url", "ftp://b:2", "https://c:3"]);
  assert.deepEqual(d.endpoints(), ["http://a:1", "https://c:3"]);
});

test("Director shuffles at every refresh with the injected randomness", () => {
  const { d } = director(() => 0); // every step swaps with index 0
  d.setUrls(["http://a:1", "http://b:1", "http://c:1"]);
  assert.deepEqual(d.endpoints(), ["http://b:1", "http://c:1", "http://a:1"]);
});

test("Director skips a failed endpoint until the failure wait ends", () => {
  const { d, clock } = director();
  d.setUrls(["http://a:1", "http://b:1"]);
  d.failed("http://a:1");
  assert.deepEqual(d.endpoints(), ["http://b:1"]);
  clock.now += 499;
  d.failed("http://a:1"); // already failed: the wait is not extended
  assert.deepEqual(d.endpoints(), ["http://b:1"]);
  clock.now += 1;
  assert.deepEqual(d.endpoints(), ["http://a:1", "http://b:1"]);
  assert.deepEqual(d.all(), ["http://a:1", "http://b:1"]);
});

test("Director makes every endpoint available again when the list is refreshed", () => {
  const { d } = director();
  d.setUrls(["http://a:1", "http://b:1"]);
  d.failed("http://a:1");
  d.failed("http://b:1");
  assert.deepEqual(d.endpoints(), []);
  d.setUrls(["http://a:1", "http://b:1"]);
  assert.deepEqual(d.endpoints(), ["http://a:1", "http://b:1"]);
  d.setUrls([]);
  assert.deepEqual(d.endpoints(), []);
});
