// RFC 3339 timestamps as Go's time.RFC3339Nano renders a UTC time.Time:
// "2006-01-02T15:04:05.999999999Z" - the fraction has up to 9 digits with trailing zeros
// trimmed, and no fraction (not even the dot) when it is zero.
//
// etcd prints the expire time the proposer stamped with Go's nanosecond clock, in UTC
// (node.go's expirationAndTTL calls .UTC(), so TZ does not matter). A double near 1.8e12 ms
// holds only about 0.25 us, so nanoseconds travel apart: `ms` (an integer in new entries)
// plus `extraNs` (0..999999). A fractional `ms` comes from entries and images written
// before the nanoseconds were carried; its fraction is rounded to whole microseconds:
// 1795320928985.4 renders ".9854Z", not the ".985399902Z" the raw double would spell.
// Deterministic, which replication needs.

const US_PER_MS = 1000;
const NS_PER_MS = 1_000_000;
/** Go's time.Duration bounds (int64 ns) in microseconds, as doubles. */
const MIN_DURATION_US = -9223372036854775.808;
const MAX_DURATION_US = 9223372036854775.807;

/** Formats ms since the epoch (+ extraNs nanoseconds) as RFC 3339 with nanoseconds, UTC. */
export function formatRfc3339Nano(ms: number, extraNs = 0): string {
  let whole = Math.floor(ms);
  let subNs = Math.round((ms - whole) * US_PER_MS) * 1000 + extraNs;
  while (subNs >= NS_PER_MS) {
    whole += 1;
    subNs -= NS_PER_MS;
  }
  // toISOString gives "YYYY-MM-DDTHH:MM:SS.mmmZ" for years 0..9999; keep the seconds part.
  const iso = new Date(whole).toISOString();
  const dot = iso.lastIndexOf(".");
  const head = iso.slice(0, dot);
  const msPart = ((whole % 1000) + 1000) % 1000;
  const nanos = msPart * NS_PER_MS + subNs;
  if (nanos === 0) return head + "Z";
  return head + "." + String(nanos).padStart(9, "0").replace(/0+$/, "") + "Z";
}

/**
 * Seconds left until expireTime (+ extraNs), rounded up (etcd: ceil((expire - now) / 1s)); 0 or
 * negative once due. The difference is first rounded to whole microseconds so that the
 * float error of (now + ttl*1000) - now never turns an exact 5 s into 6 s.
 */
export function ttlSeconds(expireTime: number, now: number, extraNs = 0): number {
  // Go's Time.Sub saturates at the int64 Duration range: a wrapped expiration centuries
  // away shows etcd's -9223372036 (or 9223372037), not the true distance.
  const us = Math.min(Math.max(Math.round((expireTime - now) * 1000 + extraNs / 1000), MIN_DURATION_US), MAX_DURATION_US);
  const s = Math.ceil(us / 1_000_000);
  return s === 0 ? 0 : s; // no -0
}
