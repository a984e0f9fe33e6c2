// The proposer's clock for v2 expirations, to the nanosecond as etcd's Go clock stamps
// them. Date.now() has whole milliseconds and performance's double about a quarter of a
// microsecond near 1.8e12 ms, so the nanoseconds come from the monotonic clock
// (process.hrtime.bigint) counted from an anchor on the wall clock. The digits are as real
// as Go's: the same kernel clocks, the offset to the wall clock known to within a
// microsecond while performance.timeOrigin still matches Date.now(), and to the
// millisecond after the wall clock was stepped (then Date.now() is the anchor).

/** A wall-clock time: whole ms since the epoch, and the nanoseconds within that ms. */
export interface WallTime {
  ms: number;
  /** 0..999999 */
  ns: number;
}

const NS_PER_MS = 1_000_000n;

let anchorNs = 0n;
let anchorHr = 0n;
let anchored = false;

function anchor(): void {
  const hr = process.hrtime.bigint();
  const wall = Date.now();
  // performance.now() reads the same monotonic clock as hrtime; timeOrigin was taken from
  // the wall clock with its sub-ms part. Both agree with Date.now() until a clock step.
  const fine = performance.timeOrigin + performance.now();
  const ms = fine >= wall && fine < wall + 1 ? fine : wall;
  const whole = Math.floor(ms);
  anchorNs = BigInt(whole) * NS_PER_MS + BigInt(Math.min(999_999, Math.round((ms - whole) * 1e6)));
  anchorHr = hr;
  anchored = true;
}

function read(): bigint {
  return anchorNs + (process.hrtime.bigint() - anchorHr);
}

/** Now, with nanoseconds; never more than a millisecond from Date.now(). */
export function wallClockNs(): WallTime {
  if (!anchored) anchor();
  let t = read();
  const wall = Date.now();
  let ms = Number(t / NS_PER_MS);
  // Date.now() truncates, so the true time is in [wall, wall + 1); a reading outside
  // [wall - 1, wall + 1] means the wall clock moved apart from the monotonic one.
  if (ms < wall - 1 || ms > wall + 1) {
    anchor();
    t = read();
    ms = Number(t / NS_PER_MS);
  }
  return { ms, ns: Number(t % NS_PER_MS) };
}
