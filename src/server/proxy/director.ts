// Which members the proxy may send a request to, in which order (etcd's httpproxy director).
// The list is replaced at each refresh, shuffled so that proxies do not all pile onto the
// first member. A member that failed a request is skipped for --proxy-failure-wait, then
// tried again. Time comes from an injected clock: no timers here.
//
// Invariant: endpoints() returns each URL at most once, in the shuffled order, without the
// ones whose failure wait has not ended.
import type { Logger } from "../logger.ts";

interface Endpoint {
  url: string;
  /** 0 when available; else the clock time at which it may be tried again. */
  failedUntil: number;
}

export interface DirectorOptions {
  failureWaitMs: number;
  log: Logger;
  /** Milliseconds; default Date.now. */
  now?: () => number;
  /** In [0, 1); default Math.random. */
  random?: () => number;
}

export class Director {
  #endpoints: Endpoint[] = [];
  readonly #failureWaitMs: number;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #random: () => number;

  constructor(o: DirectorOptions) {
    this.#failureWaitMs = o.failureWaitMs;
    this.#log = o.log;
    this.#now = o.now ?? Date.now;
    this.#random = o.random ?? Math.random;
  }

  /** Replaces the endpoints (all available again), shuffled; invalid URLs are dropped. */
  setUrls(urls: readonly string[]): void {
    const next: Endpoint[] = [];
    const seen = new Set<string>();
    for (const raw of urls) {
      let u: URL;
      try {
        u = new URL(raw);
      } catch {
        this.#log.warn("upstream URL invalid", { url: raw });
        continue;
      }
      if (u.protocol !== "http:" && u.protocol !== "https:") {
        this.#log.warn("upstream URL invalid", { url: raw });
        continue;
      }
      const url = u.origin;
      if (seen.has(url)) continue;
      seen.add(url);
      next.push({ url, failedUntil: 0 });
    }
    // Fisher-Yates, as etcd's refresh shuffles.
    for (let i = next.length - 1; i > 0; i--) {
      const j = Math.floor(this.#random() * (i + 1));
      [next[i], next[j]] = [next[j]!, next[i]!];
    }
    this.#endpoints = next;
  }

  /** The endpoints to try now, in order. */
  endpoints(): string[] {
    const now = this.#now();
    const out: string[] = [];
    for (const ep of this.#endpoints) {
      if (ep.failedUntil !== 0 && ep.failedUntil <= now) {
        ep.failedUntil = 0;
        this.#log.info("marked endpoint available, to retest connectivity", { endpoint: ep.url });
      }
      if (ep.failedUntil === 0) out.push(ep.url);
    }
    return out;
  }

  /** Every endpoint, failed or not. */
  all(): string[] {
    return this.#endpoints.map((e) => e.url);
  }

  /** A request to `url` failed: skip it for the failure wait. */
  failed(url: string): void {
    const ep = this.#endpoints.find((e) => e.url === url);
    if (ep === undefined || ep.failedUntil !== 0) return;
    ep.failedUntil = this.#now() + Math.max(1, this.#failureWaitMs);
    this.#log.warn("marked endpoint unavailable", { endpoint: url, "failure-wait-ms": this.#failureWaitMs });
  }
}
