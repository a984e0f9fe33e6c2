// Member statistics for /v2/stats/self and /v2/stats/leader (etcd's v2stats). The
// transport counts messages, bytes and latencies; this module shapes them as etcd does.
import type { PeerStats, SelfTransportStats } from "../transport/index.ts";

/** Go's time.Duration.String() for a duration in milliseconds (fractional ms allowed). */
export function goDuration(ms: number): string {
  if (ms <= 0) return "0s";
  const totalNs = Math.round(ms * 1e6);
  if (totalNs < 1000) return `${totalNs}ns`;
  if (totalNs < 1e6) return `${trimFrac((totalNs / 1e3).toFixed(3))}µs`;
  if (totalNs < 1e9) return `${trimFrac((totalNs / 1e6).toFixed(6))}ms`;
  let rest = totalNs;
  const h = Math.floor(rest / 3.6e12);
  rest -= h * 3.6e12;
  const m = Math.floor(rest / 6e10);
  rest -= m * 6e10;
  const s = trimFrac((rest / 1e9).toFixed(9));
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}

function trimFrac(s: string): string {
  return s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s;
}

/** RFC 3339 with nanoseconds and the local offset, as Go prints time.Time in JSON. */
export function goTime(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number, w = 2): string => String(n).padStart(w, "0");
  const frac = Math.round((ms - Math.floor(ms / 1000) * 1000) * 1e6);
  const fracStr = frac === 0 ? "" : "." + String(frac).padStart(9, "0").replace(/0+$/, "");
  return (
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${fracStr}Z`
  );
}

export interface SelfStatsJSON {
  name: string;
  id: string;
  state: string;
  startTime: string;
  leaderInfo: { leader: string; uptime: string; startTime: string };
  recvAppendRequestCnt: number;
  recvPkgRate?: number;
  recvBandwidthRate?: number;
  sendAppendRequestCnt: number;
  sendPkgRate?: number;
  sendBandwidthRate?: number;
}

export interface LeaderStatsJSON {
  leader: string;
  followers: Record<string, { latency: PeerStats["latencyMs"]; counts: { fail: number; success: number } }>;
}

export class ServerStats {
  #name = "";
  #id = 0;
  #startTime = 0;
  #leader = 0;
  #leaderStart = 0;
  #leaderChanges = 0;

  start(name: string, id: number): void {
    this.#name = name;
    this.#id = id;
    this.#startTime = Date.now();
  }

  /** Leaders seen (etcd_server_leader_changes_seen_total): every change to a known leader. */
  get leaderChanges(): number {
    return this.#leaderChanges;
  }

  leaderChanged(lead: number): void {
    if (lead !== 0 && lead !== this.#leader) this.#leaderChanges++;
    this.#leader = lead;
    this.#leaderStart = Date.now();
  }

  /** /v2/stats/self: rates are shown only where etcd shows them (non-zero, by role). */
  self(t: SelfTransportStats): SelfStatsJSON {
    const isLeader = this.#leader === this.#id && this.#id !== 0;
    const out: SelfStatsJSON = {
      name: this.#name,
      id: this.#id.toString(16),
      state: isLeader ? "StateLeader" : "StateFollower",
      startTime: goTime(this.#startTime),
      leaderInfo: {
        leader: this.#leader.toString(16),
        uptime: goDuration(this.#leader === 0 ? 0 : Date.now() - this.#leaderStart),
        startTime: goTime(this.#leaderStart || this.#startTime),
      },
      recvAppendRequestCnt: t.recvAppendRequestCnt,
      sendAppendRequestCnt: t.sendAppendRequestCnt,
    };
    if (!isLeader) {
      if (t.recvPkgRate > 0) out.recvPkgRate = t.recvPkgRate;
      if (t.recvBandwidthRate > 0) out.recvBandwidthRate = t.recvBandwidthRate;
    } else {
      if (t.sendPkgRate > 0) out.sendPkgRate = t.sendPkgRate;
      if (t.sendBandwidthRate > 0) out.sendBandwidthRate = t.sendBandwidthRate;
    }
    return out;
  }

  /** /v2/stats/leader: one entry per follower, keyed by hex id. */
  leader(peers: Record<string, PeerStats>): LeaderStatsJSON {
    const followers: LeaderStatsJSON["followers"] = {};
    for (const [id, p] of Object.entries(peers)) followers[id] = { latency: p.latencyMs, counts: { fail: p.failed, success: p.sent } };
    return { leader: this.#id.toString(16), followers };
  }
}
