// RFC 3339 timestamps as Go's time.RFC3339Nano renders a UTC time.Time:
// "2006-01-02T15:04:05.999999999Z" - the fraction has up to 9 digits with trailing zeros
// trimmed, and no fraction (not even the dot) when it is zero.
//
// Input is milliseconds since the epoch and may carry a fraction (sub-ms precision). A
// double near 1.8e12 ms holds only about 0.25 us, so the fraction is rounded to whole
// microseconds (the finest any JS clock gives): 1795320928985.4 renders ".9854Z", not the
// ".985399902Z" the raw double would spell. Deterministic, which replication needs.

const US_PER_MS = 1000;

/** Formats ms since the epoch (may be fractional) as RFC 3339 with nanoseconds, UTC. */
export function formatRfc3339Nano(ms: number): string {
  let whole = Math.floor(ms);
  let subUs = Math.round((ms - whole) * US_PER_MS);
  if (subUs >= US_PER_MS) {
    whole += 1;
    subUs -= US_PER_MS;
  }
  // toISOString gives "YYYY-MM-DDTHH:MM:SS.mmmZ" for years 0..9999; keep the seconds part.
  const iso = new Date(whole).toISOString();
  const dot = iso.lastIndexOf(".");
  const head = iso.slice(0, dot);
  const msPart = ((whole % 1000) + 1000) % 1000;
  const nanos = msPart * 1_000_000 + subUs * 1000;
  if (nanos === 0) return head + "Z";
  return head + "." + String(nanos).padStart(9, "0").replace(/0+$/, "") + "Z";
}

/**
 * Seconds left until expireTime, rounded up (etcd: ceil((expire - now) / 1s)); 0 or
 * negative once due. The difference is first rounded to whole microseconds so that the
 * float error of (now + ttl*1000) - now never turns an exact 5 s into 6 s.
 */
export function ttlSeconds(expireTime: number, now: number): number {
  const us = Math.round((expireTime - now) * 1000);
  const s = Math.ceil(us / 1_000_000);
  return s === 0 ? 0 : s; // no -0
}
