import assert from "node:assert/strict";
import { test } from "node:test";
import { CallDeadline, parseGrpcTimeout } from "./deadline.ts";

test("grpc-timeout as grpc-go 1.33's decodeTimeout reads it", () => {
  assert.equal(parseGrpcTimeout("100m"), 100);
  assert.equal(parseGrpcTimeout("5S"), 5000);
  assert.equal(parseGrpcTimeout("2M"), 120_000);
  assert.equal(parseGrpcTimeout("1H"), 3_600_000);
  assert.equal(parseGrpcTimeout("250u"), 0.25);
  assert.equal(parseGrpcTimeout("3000000n"), 3);
  assert.equal(parseGrpcTimeout("12345678S"), 12_345_678_000, "eight digits");
  assert.equal(parseGrpcTimeout("99999999H"), 99_999_999 * 3_600_000);
  // strconv.ParseInt takes a sign: a negative or zero timeout is a deadline already passed.
  assert.equal(parseGrpcTimeout("+5S"), 5000);
  assert.equal(parseGrpcTimeout("-5S"), -5000);
  assert.equal(parseGrpcTimeout("0S"), 0);
  for (const bad of ["", "1", "S", "123456789S", "5x", "5s", " 5S", "5 S", "1.5S", "-S", "0x10S", "five"]) {
    assert.equal(parseGrpcTimeout(bad), undefined, JSON.stringify(bad));
  }
});

test("a call's deadline: expired from the clock, listeners once, cancel", async () => {
  assert.equal(new CallDeadline(0).expired, true, "a zero timeout has passed before its timer runs");
  assert.equal(new CallDeadline(-1000).expired, true);
  const d = new CallDeadline(30);
  assert.equal(d.expired, false);
  let fired = 0;
  let undone = 0;
  d.onExpire(() => fired++);
  const undo = d.onExpire(() => undone++);
  undo();
  // Listeners run in the order added: this one runs after the two above.
  await expiry(d);
  assert.equal(d.expired, true);
  assert.deepEqual([fired, undone], [1, 0]);
  let late = 0;
  d.onExpire(() => late++);
  assert.equal(late, 1, "a listener added after the deadline runs at once");
  // Nothing shows a canceled deadline's silence but a twin that expires: timers of one
  // delay fire in the order they were armed, so the canceled one would have fired first.
  const c = new CallDeadline(20);
  const twin = new CallDeadline(20);
  let canceled = 0;
  c.onExpire(() => canceled++);
  c.cancel();
  await expiry(twin);
  assert.equal(canceled, 0);
  // Longer than setTimeout's 2^31-1 ms: re-armed, not fired after 1 ms (a 20 ms deadline
  // armed after it expires later than that 1 ms would have).
  const far = new CallDeadline(30 * 24 * 3600 * 1000);
  let farFired = 0;
  far.onExpire(() => farFired++);
  await expiry(new CallDeadline(20));
  assert.equal(farFired, 0);
  far.cancel();
});

/**
 * Resolves when `d` expires. Its timer is unref'd (it must not keep a member alive), so a
 * ref'd one keeps the test process up meanwhile and fails the wait after 5 s.
 */
function expiry(d: CallDeadline): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error("timed out waiting for a deadline to expire")), 5000);
    d.onExpire(() => {
      clearTimeout(guard);
      resolve();
    });
  });
}
