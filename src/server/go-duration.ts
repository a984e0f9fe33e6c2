// Go's time.ParseDuration, for the etcd flags that take durations (--grpc-keepalive-time,
// --experimental-watch-progress-notify-interval, --auto-compaction-retention, JWT ttl=...):
// the same syntax ("1h30m", "1.5s", "300ms", "-2m", a bare "0") and the same error texts,
// so a value etcd refuses is refused here with etcd's words, and one it takes is taken.

const unitNs: ReadonlyMap<string, bigint> = new Map([
  ["ns", 1n],
  ["us", 1_000n],
  ["µs", 1_000n], // U+00B5
  ["μs", 1_000n], // U+03BC
  ["ms", 1_000_000n],
  ["s", 1_000_000_000n],
  ["m", 60_000_000_000n],
  ["h", 3_600_000_000_000n],
]);

const MAX_INT64 = (1n << 63n) - 1n;

export class GoDurationError extends Error {
  override name = "GoDurationError";
}

const quote = (s: string): string => JSON.stringify(s);

/** Nanoseconds, as Go's time.Duration; throws GoDurationError with Go's message. */
export function parseGoDuration(orig: string): bigint {
  let s = orig;
  let neg = false;
  if (s !== "" && (s[0] === "-" || s[0] === "+")) {
    neg = s[0] === "-";
    s = s.slice(1);
  }
  if (s === "0") return 0n;
  const invalid = (): GoDurationError => new GoDurationError(`time: invalid duration ${quote(orig)}`);
  if (s === "") throw invalid();
  let total = 0n;
  while (s !== "") {
    const m = /^([0-9]*)(?:\.([0-9]*))?/.exec(s);
    const whole = m?.[1] ?? "";
    const frac = m?.[2];
    if (m === null || (whole === "" && (frac === undefined || frac === ""))) throw invalid();
    s = s.slice(m[0].length);
    let i = 0;
    while (i < s.length && s[i] !== "." && !(s[i]! >= "0" && s[i]! <= "9")) i++;
    if (i === 0) throw new GoDurationError(`time: missing unit in duration ${quote(orig)}`);
    const u = s.slice(0, i);
    s = s.slice(i);
    const unit = unitNs.get(u);
    if (unit === undefined) throw new GoDurationError(`time: unknown unit ${quote(u)} in duration ${quote(orig)}`);
    let v = BigInt(whole === "" ? "0" : whole) * unit;
    if (frac !== undefined && frac !== "") {
      // Go drops fraction digits beyond what fits; truncation matches it for every real unit.
      v += (BigInt(frac) * unit) / 10n ** BigInt(frac.length);
    }
    total += v;
    if (total > MAX_INT64) throw invalid();
  }
  return neg ? -total : total;
}
