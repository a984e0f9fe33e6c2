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
// - clients have not been concurrent lately: for `concurrentMs` after a save that one of
//   the two looks above kept off the loop, later saves stay off it too. Between two saves
//   of a busy member there is often a moment with one request read and the others still
//   on their way, and a save that blocked the loop then left the next batch unread until
//   its fdatasync returned: at 16 connections 32 % of the saves went on the loop that way,
//   at half the throughput, once CPU waits no longer passed for a slow disk (below);
// - the second look is skipped once `loneAfter` on-loop saves in a row found no other
//   client in it (a lone writer): its turn of the loop is then on every write's path and
//   finds nothing. Whatever the first look sees again (a second writer's request read
//   meanwhile, a read, a batch) ends the run and brings the look back;
// - the disk has not been slow lately: after an on-loop wait longer than `slowMs`, saves
//   use the threadpool for `backoffMs`, so a stalling disk cannot freeze the member for long.
//   A wait counts only the time the thread was not waiting for a CPU (run-queue-wait.ts):
//   with the two cores shared by other busy processes, the wall time of an fdatasync was
//   often over 10 ms only because the thread waited for a CPU after the syscall returned,
//   and then 95 % of the saves took the threadpool's two thread wake-ups, which are what a
//   busy CPU makes slowest (three members, one client: 110-242 PUT/s that way, 301-341
//   with every save on the loop). The threadpool does not help a busy CPU; it helps only
//   against a slow disk.
//
// Pure: counters and times come from the caller.
export interface DiskWaitOptions {
  /** A wait longer than this (ms) marks the disk slow. */
  slowMs: number;
  /** For how long (ms) after a slow wait saves keep off the loop. */
  backoffMs: number;
  /** For how long (ms) after a save with other clients waiting saves keep off the loop. */
  concurrentMs: number;
  /** After this many on-loop saves in a row whose second look found no other client, the look is skipped. */
  loneAfter: number;
}

export const defaultDiskWaitOptions: DiskWaitOptions = { slowMs: 10, backoffMs: 5000, concurrentMs: 1000, loneAfter: 64 };

export class DiskWaitPolicy {
  readonly #opts: DiskWaitOptions;
  #requestsAtSave = 0;
  #proposalsAtSave = 0;
  #offLoopUntil = Number.NEGATIVE_INFINITY;
  #concurrentUntil = Number.NEGATIVE_INFINITY;
  /** On-loop saves in a row whose second look found the loop quiet. */
  #quietLooks = 0;

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
    if (!(entries <= 1 && began <= 1 && others <= 0)) {
      this.#concurrentUntil = now + this.#opts.concurrentMs;
      this.#quietLooks = 0;
      return false;
    }
    if (now >= this.#concurrentUntil && now >= this.#offLoopUntil) return true;
    this.#quietLooks = 0;
    return false;
  }

  /** Whether the save onLoop() let on the loop may skip the second look: a lone writer's. */
  get lone(): boolean {
    return this.#quietLooks >= this.#opts.loneAfter;
  }

  /** Second look, after the loop ran once: no client request began since onLoop() said yes. */
  stillQuiet(now: number, requests: number): boolean {
    if (requests === this.#requestsAtSave) {
      this.#quietLooks++;
      return true;
    }
    this.#concurrentUntil = now + this.#opts.concurrentMs;
    this.#quietLooks = 0;
    return false;
  }

  /**
   * An on-loop save's fdatasync took `ms` of wall time, of which the thread spent
   * `cpuWaitMs` runnable but waiting for a CPU (0 where unknown). Only on-loop waits count:
   * they are exact, and they are the waits that freeze the member. A threadpool wait is only
   * known when the loop gets to its callback, so a busy loop would pass for a slow disk
   * (seen under a mixed GET and PUT load: followers with no clients of their own kept off
   * the loop most of the time).
   */
  took(now: number, ms: number, cpuWaitMs = 0): void {
    if (ms - cpuWaitMs > this.#opts.slowMs) this.#offLoopUntil = now + this.#opts.backoffMs;
  }

  /** Whether a wait of `ms` (wall time) could mark the disk slow: only then is the CPU wait worth reading. */
  mayBeSlow(ms: number): boolean {
    return ms > this.#opts.slowMs;
  }
}
