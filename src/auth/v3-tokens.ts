// etcd's simple tokens (auth/simple_token.go): `<prefix>.<index>`, where the prefix is 16
// random letters chosen by the member that proposes the authenticate request, and the
// index is the log index of that entry. Every member applies the entry and so registers
// the same token for the same user: a client can use it on any member.
//
// The table is NOT replicated state: it is not in the snapshot image, and a restarted
// member forgets it (only authenticate entries replayed from the log come back, with their
// original time, so only tokens still inside their TTL do). It holds:
//   token -> { user, expiresAt }
// Invariants:
// - time is passed in (ms since the epoch); the table never reads a clock;
// - a token is valid while now <= expiresAt; each successful lookup pushes expiresAt to
//   now + ttl (etcd's resetSimpleToken), so an idle token dies after ttl;
// - an expired token is gone for good, even if a later lookup passes an earlier `now`.
import { V3Errors } from "../api/v3-errors.ts";

/** etcd's simpleTokenTTLDefault: 5 minutes. */
export const DEFAULT_SIMPLE_TOKEN_TTL_MS = 300_000;

/** etcd's defaultSimpleTokenLength and alphabet. */
export const SIMPLE_TOKEN_PREFIX_LENGTH = 16;
export const SIMPLE_TOKEN_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

interface TokenEntry {
  user: string;
  expiresAt: number;
}

/** The token for a prefix registered by the entry at `index` (etcd's `%s.%d`). */
export function formatSimpleToken(prefix: string, index: number): string {
  return `${prefix}.${index}`;
}

/**
 * The log index a token names, or undefined when the token is not shaped like a simple
 * token (etcd's isValidSimpleToken: exactly one ".", then an integer as Go's Atoi reads
 * it). The edge uses it like etcd's indexWaiter: a token naming an index this member has
 * not applied yet is waited for (bounded by the request's deadline) before the lookup.
 */
export function simpleTokenIndex(token: string): number | undefined {
  const parts = token.split(".");
  if (parts.length !== 2) return undefined;
  const m = /^[+-]?\d{1,18}$/.exec(parts[1]!);
  if (m === null) return undefined;
  const index = Number(parts[1]);
  return Number.isSafeInteger(index) ? index : undefined;
}

export class V3SimpleTokens {
  #ttlMs: number;
  /** Map order is registration order; refreshes do not move entries. */
  #tokens = new Map<string, TokenEntry>();
  /** Amortised clean-up: sweep when the table reaches this size. */
  #sweepAt = 1024;

  /** @param opts.ttlMs idle lifetime of a token (etcd's --auth-token-ttl), default 5 minutes */
  constructor(opts: { ttlMs?: number } = {}) {
    const ttl = opts.ttlMs ?? DEFAULT_SIMPLE_TOKEN_TTL_MS;
    if (!Number.isFinite(ttl) || ttl <= 0) throw new Error(`Cannot create token table: ttl ${ttl} is not positive`);
    this.#ttlMs = ttl;
  }

  get ttlMs(): number {
    return this.#ttlMs;
  }

  /** Tokens held, expired ones not yet swept included. */
  get size(): number {
    return this.#tokens.size;
  }

  /**
   * Registers a token for a user, valid until `now + ttl`. Registering the same token for
   * the same user again (an entry applied twice) only renews it; for another user it is an
   * invariant violation (two entries with one index), as in etcd.
   */
  register(token: string, user: string, now: number): void {
    const old = this.#tokens.get(token);
    if (old !== undefined && old.user !== user) throw new Error(`Invariant violated: simple token ${token} already belongs to another user`);
    this.#tokens.set(token, { user, expiresAt: now + this.#ttlMs });
    if (this.#tokens.size >= this.#sweepAt) {
      this.sweep(now);
      this.#sweepAt = Math.max(1024, 2 * this.#tokens.size);
    }
  }

  /** The user a token stands for; refreshes its TTL. Throws invalidAuthToken (401) when unknown or expired. */
  userOf(token: string, now: number): string {
    const e = this.#tokens.get(token);
    if (e === undefined) throw V3Errors.invalidAuthToken();
    if (now > e.expiresAt) {
      this.#tokens.delete(token);
      throw V3Errors.invalidAuthToken();
    }
    e.expiresAt = Math.max(e.expiresAt, now + this.#ttlMs);
    return e.user;
  }

  /** Drops every token of a user (etcd's invalidateUser: on delete and password change). */
  invalidateUser(user: string): void {
    for (const [token, e] of this.#tokens) if (e.user === user) this.#tokens.delete(token);
  }

  /** Keeps only the tokens of users for which `keep` answers true (after a snapshot recovery). */
  retainUsers(keep: (user: string) => boolean): void {
    for (const [token, e] of this.#tokens) if (!keep(e.user)) this.#tokens.delete(token);
  }

  /** Drops every token (etcd's disable: "invalidate all tokens"). */
  clear(): void {
    this.#tokens.clear();
  }

  /** Drops expired tokens (etcd's once-a-second TTL keeper); the edge may call it on a timer. */
  sweep(now: number): number {
    let dropped = 0;
    for (const [token, e] of this.#tokens) {
      if (now > e.expiresAt) {
        this.#tokens.delete(token);
        dropped++;
      }
    }
    return dropped;
  }
}
