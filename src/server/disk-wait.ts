// Where a WAL save waits for its fdatasync: on the event loop (blocking it) or in libuv's
// threadpool. The threadpool keeps the loop free for other requests, but every save then
// costs two thread wake-ups, and on two cores shared by three members and their clients
// those wake-ups are most of a save's CPU: serial PUTs to a three-member cluster were
// 19 % faster with this policy (5 interleaved rounds: 924 -> 1,096 req/s, p99 2.97 ->
// 2.58 ms), and 16 or 64 writers as fast as before.
//
// So a save blocks the loop only when nothing else is waiting for it:
// - it carries one entry, and at most one client request began since the previous save,
//   one that proposed (it waits for this save anyway): a GET, a quorum read or a watch
//   arriving between saves means clients are being served meanwhile;
// - after letting the loop run the callbacks it already has (one setImmediate), still no
//   client request arrived. Without this second look, concurrent
//   clients lost group commit: the first request's save blocked the loop before the
//   others in the same poll were read, so each got an fdatasync of its own (16 clients:
//   2,800 -> 1,400 req/s). Peer messages do not count: what they bring waits for the
//   next Ready, which waits for this save wherever it waits;
// - the disk has not been slow lately: after an on-loop wait longer than `slowMs`, saves
//   use the threadpool for `backoffMs`, so a stalling disk cannot freeze the member for long.
//
// Pure: counters and times come from the caller.
export interface DiskWaitOptions {
  /** A wait longer than this (ms) marks the disk slow. */
  slowMs: number;
  /** For how long (ms) after a slow wait saves keep off the loop. */
  backoffMs: number;
}

export const defaultDiskWaitOptions: DiskWaitOptions = { slowMs: 10, backoffMs: 5000 };

export class DiskWaitPolicy {
  readonly #opts: DiskWaitOptions;
  #requestsAtSave = 0;
  #proposalsAtSave = 0;
  #offLoopUntil = Number.NEGATIVE_INFINITY;

  constructor(opts: DiskWaitOptions = defaultDiskWaitOptions) {
    this.#opts = opts;
  }

  /**
   * First look: whether the save about to start may wait on the loop. If so, the caller
   * lets the loop run once and asks stillQuiet().
   * @param requests client requests this member has begun serving, ever (a counter)
   * @param proposals proposals this member has made, ever (a counter)
   * @param entries entries in the save
   */
  onLoop(now: number, requests: number, proposals: number, entries: number): boolean {
    const began = requests - this.#requestsAtSave;
    const others = began - (proposals - this.#proposalsAtSave);
    this.#requestsAtSave = requests;
    this.#proposalsAtSave = proposals;
    return entries <= 1 && began <= 1 && others <= 0 && now >= this.#offLoopUntil;
  }

  /** Second look, after the loop ran once: no client request began since onLoop() said yes. */
  stillQuiet(requests: number): boolean {
    return requests === this.#requestsAtSave;
  }

  /**
   * An on-loop save's fdatasync took `ms`. Only those count: they are exact, and they are the
   * waits that freeze the member. A threadpool wait is only known when the loop gets to its
   * callback, so a busy loop would pass for a slow disk (seen under a mixed GET and PUT load:
   * followers with no clients of their own kept off the loop most of the time).
   */
  took(now: number, ms: number): void {
    if (ms > this.#opts.slowMs) this.#offLoopUntil = now + this.#opts.backoffMs;
  }
}
