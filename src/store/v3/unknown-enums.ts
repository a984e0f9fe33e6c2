// Enum numbers etcd 3.4 does not know, as it acts on them. Both gRPC (gogoproto keeps any
// enum number) and the JSON gateway (jsonpb takes any int32 given as a number) hand them on.
//
// A Compare whose result or target it does not know goes to etcd's compareKV, which evaluates it rather than refusing it: an unknown
// target leaves the comparison at 0 (so EQUAL holds, GREATER, LESS and NOT_EQUAL do not)
// and an unknown result holds whatever the comparison; applyCompare still fails a VALUE
// compare on a range without keys. Each case is a constant over the keys found, so it is
// written as the known compare that answers the same, and the log and the store keep
// their types.
import { CompareResult, CompareTarget, type CompareResultValue, type SortOrderValue, type SortTargetValue } from "./types.ts";

const KNOWN_RESULTS = 3;
const KNOWN_TARGETS = 4;

/** True when etcd knows both numbers (the Compare needs no rewriting). */
export function compareKnown(result: number, target: number): boolean {
  return result >= 0 && result <= KNOWN_RESULTS && target >= 0 && target <= KNOWN_TARGETS;
}

/** The known Compare (without key and range) that answers as etcd does for these numbers. */
export function unknownCompare(result: number, target: number): { target: typeof CompareTarget.VERSION; version: number; result: CompareResultValue } {
  // Version > -1 holds for every key found.
  const always = { target: CompareTarget.VERSION, version: -1, result: CompareResult.GREATER } as const;
  if (result < 0 || result > KNOWN_RESULTS) {
    // True for every key found; for none, true but on VALUE. Version > 0: true for any key.
    return target === CompareTarget.VALUE ? { target: CompareTarget.VERSION, version: 0, result: CompareResult.GREATER } : always;
  }
  return result === CompareResult.EQUAL ? always : { target: CompareTarget.VERSION, version: -1, result: CompareResult.LESS };
}

/**
 * A RangeRequest's sort order as etcd's applierV3backend.Range treats the number: one it
 * does not know is no NONE for the limit (all keys are fetched, then cut) but sorts
 * nothing, so the keys come in key order, as NONE with target KEY gives them.
 */
export function sortOrderOf(order: number): SortOrderValue {
  return (order >= 0 && order <= 2 ? order : 0) as SortOrderValue;
}

/**
 * The sort target to use with sortOrderOf(order): KEY when the order is unknown (nothing
 * is sorted); an unknown target with a known order crashes etcd 3.4.23 (sort.Sort of a nil
 * sorter, even for NONE, which becomes ASCEND for a target other than KEY): here it is KEY.
 */
export function sortTargetOf(order: number, target: number): SortTargetValue {
  return (order >= 0 && order <= 2 && target >= 0 && target <= 4 ? target : 0) as SortTargetValue;
}
