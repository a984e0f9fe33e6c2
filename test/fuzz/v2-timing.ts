// Timing the fuzzer must not compare: the index both fresh servers start from, and a TTL
// that is due the moment it is written, which each server expires at its own next SYNC.
import { paramsOf, send, type FuzzRequest, type RawResponse } from "./v2-raw.ts";

/**
 * Go's `clock.Now().Add(time.Duration(ttl) * time.Second).UnixNano()` (etcd's v2 handler):
 * both products wrap at int64, so a large enough TTL lands in the past (1688 for
 * 99999999999). The time in ns since the epoch.
 */
function goExpiration(ttl: bigint, nowMs: number): bigint {
  const d = BigInt.asIntN(64, ttl * 1_000_000_000n);
  return BigInt.asIntN(64, BigInt(Math.round(nowMs)) * 1_000_000n + d);
}

/**
 * Did this answer leave a node that is due already: an update or CAS whose TTL wrapped
 * into the past (a set or create makes such a node permanent instead)? Each server
 * removes it at its own next SYNC, up to 500 ms later and not at the same moment as the
 * other, and until then the two answer with indexes and listings that depend on that
 * timing alone, so the run waits until both have expired it. The time is read from the
 * answer, or from the request's TTL when noValueOnSuccess left the node out.
 */
export function dueAtOnce(req: FuzzRequest, r: RawResponse): boolean {
  if (r.status !== 200 || !(r.headers.get("content-type") ?? "").startsWith("application/json")) return false;
  let body: { action?: unknown; node?: { expiration?: unknown } };
  try {
    body = JSON.parse(r.body) as typeof body;
  } catch {
    return false;
  }
  if (body.action !== "update" && body.action !== "compareAndSwap") return false;
  if (body.node !== undefined) return typeof body.node.expiration === "string" && Date.parse(body.node.expiration) < r.at;
  const ttl = paramsOf(req).get("ttl") ?? "";
  return /^\d{1,20}$/.test(ttl) && BigInt(ttl) < 2n ** 64n && goExpiration(BigInt(ttl), r.at) < BigInt(r.at) * 1_000_000n;
}

export const indexOf = (r: RawResponse): number => Number(r.headers.get("x-etcd-index") ?? r.headers.get("x-kv-index"));

/**
 * Waits (up to 3 s: six of either server's SYNC periods) until the server's v2 index is
 * past `index`, that is until its SYNC expired the node due since the write at `index`:
 * nothing else writes between two fuzz requests.
 */
export async function awaitExpiry(port: number, index: number): Promise<void> {
  const deadline = Date.now() + 3000;
  const probe: FuzzRequest = { method: "GET", target: "/v2/keys/", headers: [], mayBlock: false };
  while (Date.now() < deadline) {
    if (indexOf(await send(port, probe, 2000)) > index) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits (up to 5 s) until both fresh servers are at the same index, the one etcd 3.4
 * reaches before any client write (the member, its attributes, the cluster version), and
 * returns it. The generator's waitIndex and prevIndex values come from etcd's answers
 * and must mean the same event and node on kvctl; the two disagreeing is a finding.
 */
export async function sameStartIndex(etcdPort: number, kvctlPort: number): Promise<number> {
  const probe: FuzzRequest = { method: "GET", target: "/v2/keys/", headers: [], mayBlock: false };
  const deadline = Date.now() + 5000;
  for (;;) {
    const [e, k] = [indexOf(await send(etcdPort, probe, 2000)), indexOf(await send(kvctlPort, probe, 2000))];
    if (e === k && Number.isFinite(e)) return e;
    if (Date.now() > deadline) throw new Error(`Cannot start the fuzz run: the fresh servers are at different v2 indexes (etcd ${e}, kvctl ${k})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
