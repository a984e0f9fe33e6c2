// "No acknowledged write is lost": the value a key holds after every member restarted
// must be the last acknowledged value or a later one.
//
// Precisely (values are unique): the final value must have been written by a write w
// (acknowledged or unknown) that no acknowledged write follows in real time, i.e. there is
// no acknowledged w2 with w2.call > w.return. An unknown write never returned, so nothing
// follows it. A missing key is acceptable only if no write was acknowledged (the workload
// never deletes).

import type { RegisterOperation } from "../linearizability/register-model.ts";

export interface LostWrite {
  key: string;
  /** What the key held after the restart (null = not found). */
  found: string | null;
  /** Why that is wrong. */
  reason: string;
}

export function findLostWrites(history: readonly RegisterOperation[], finals: ReadonlyMap<string, string | null>): LostWrite[] {
  const lost: LostWrite[] = [];
  for (const [key, found] of finals) {
    const writes = history.filter((op) => op.input.key === key && op.input.op !== "get" && (op.output.type === "ok" || op.output.type === "unknown"));
    const acked = writes.filter((op) => op.output.type === "ok");
    if (acked.length === 0) continue;
    const lastAcked = acked.reduce((a, b) => (b.return > a.return ? b : a));
    const lastValue = lastAcked.input.op === "get" ? "" : lastAcked.input.value;
    if (found === null) {
      lost.push({ key, found, reason: `key missing, but ${acked.length} writes were acknowledged (last: ${JSON.stringify(lastValue)})` });
      continue;
    }
    const writer = writes.find((op) => op.input.op !== "get" && op.input.value === found);
    if (writer === undefined) {
      lost.push({ key, found, reason: `value ${JSON.stringify(found)} was never written` });
      continue;
    }
    const later = acked.find((w2) => w2.call > writer.return);
    if (later !== undefined && later.input.op !== "get") {
      lost.push({
        key,
        found,
        reason: `value ${JSON.stringify(found)} was overwritten by acknowledged ${JSON.stringify(later.input.value)} (called after it returned); last acknowledged: ${JSON.stringify(lastValue)}`,
      });
    }
  }
  return lost;
}
