// Operation counters of the v2 store (etcd's stats.go), served as /v2/stats/store.
// In memory only: they reset on restart and are not part of snapshots.

import type { V2StoreStatsJSON } from "../../api/v2-types.ts";

export type V2Counter = Exclude<keyof V2StoreStatsJSON, "watchers">;

export class V2Stats {
  #c: Record<V2Counter, number> = {
    getsSuccess: 0,
    getsFail: 0,
    setsSuccess: 0,
    setsFail: 0,
    deleteSuccess: 0,
    deleteFail: 0,
    updateSuccess: 0,
    updateFail: 0,
    createSuccess: 0,
    createFail: 0,
    compareAndSwapSuccess: 0,
    compareAndSwapFail: 0,
    compareAndDeleteSuccess: 0,
    compareAndDeleteFail: 0,
    expireCount: 0,
  };

  inc(counter: V2Counter): void {
    this.#c[counter]++;
  }

  /**
   * Gets by kind, failed ones included (etcd's etcd_debugging_store_reads_total{action},
   * which its store's Get counts on success and failure alike).
   */
  readonly reads = { get: 0, getRecursive: 0 };

  read(recursive: boolean): void {
    if (recursive) this.reads.getRecursive++;
    else this.reads.get++;
  }

  /** The wire object, in etcd's field order; `watchers` is a gauge read from the hub. */
  toJSON(watchers: number): V2StoreStatsJSON {
    const c = this.#c;
    return {
      getsSuccess: c.getsSuccess,
      getsFail: c.getsFail,
      setsSuccess: c.setsSuccess,
      setsFail: c.setsFail,
      deleteSuccess: c.deleteSuccess,
      deleteFail: c.deleteFail,
      updateSuccess: c.updateSuccess,
      updateFail: c.updateFail,
      createSuccess: c.createSuccess,
      createFail: c.createFail,
      compareAndSwapSuccess: c.compareAndSwapSuccess,
      compareAndSwapFail: c.compareAndSwapFail,
      compareAndDeleteSuccess: c.compareAndDeleteSuccess,
      compareAndDeleteFail: c.compareAndDeleteFail,
      expireCount: c.expireCount,
      watchers,
    };
  }
}
