// The cluster version, as etcd 3.4's leader decides and records it (monitorVersions,
// decideClusterVersion): the lowest major.minor among the members' server versions, known
// only when every member answers on its peer port. /version reports it ("not_decided" until
// one is recorded), and so does the etcd_cluster_version gauge.
//
// Invariants:
// - Only the leader proposes, at the first commit of its term and every 4 s; the value goes
//   through the log (a 'ver' command, one v2 index as etcd's PUT of /0/version), so every
//   member reports the same one.
// - While a member does not answer, the version is not known: a cluster with none recorded
//   records etcd's minimum, 3.0.0, and raises it once every member answers. A recorded
//   version is never lowered.
// - One check at a time, so a slow proposal is not proposed twice.
import type { Logger } from "./logger.ts";
import type { Member, Membership } from "./membership.ts";
import { ETCD_SERVER_VERSION } from "./version.ts";

/** etcd's version.MinClusterVersion. */
export const MIN_CLUSTER_VERSION = "3.0.0";
/** etcd's monitorVersionInterval (rafthttp.ConnWriteTimeout - 1 s). */
export const MONITOR_VERSIONS_INTERVAL_MS = 4000;

function parts(v: string): [number, number, number] {
  const [major = 0, minor = 0, patch = 0] = v.split(/[.+-]/).map((p) => Number.parseInt(p, 10) || 0);
  return [major, minor, patch];
}

function lessThan(a: string, b: string): boolean {
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! < y[i]!;
  return false;
}

/** etcd's decideClusterVersion: the lowest major.minor of the members' server versions, undefined when one is unknown. */
export function decideClusterVersion(serverVersions: ReadonlyArray<string | undefined>): string | undefined {
  let lowest: string | undefined;
  for (const v of serverVersions) {
    if (v === undefined) return undefined;
    if (lowest === undefined || lessThan(v, lowest)) lowest = v;
  }
  if (lowest === undefined) return undefined;
  const [major, minor] = parts(lowest);
  return `${major}.${minor}.0`;
}

/** What the leader records: a first version (the decided one, or the minimum), or a higher one; undefined for nothing. */
export function versionToRecord(recorded: string | undefined, decided: string | undefined): string | undefined {
  if (recorded === undefined) return decided ?? MIN_CLUSTER_VERSION;
  return decided !== undefined && lessThan(recorded, decided) ? decided : undefined;
}

/** What the monitor needs of its member. */
export interface ClusterVersionHost {
  readonly memberId: number;
  readonly log: Logger;
  isLeader(): boolean;
  membership(): Pick<Membership, "list" | "version">;
  /** Another member's server version, undefined when its peer port does not answer. */
  versionOf(m: Member): Promise<string | undefined>;
  /** Proposes the version; settles when applied (or failed). */
  record(version: string): Promise<unknown>;
}

export class ClusterVersionMonitor {
  readonly #host: ClusterVersionHost;
  #timer: NodeJS.Timeout | undefined;
  #busy = false;

  constructor(host: ClusterVersionHost) {
    this.#host = host;
  }

  start(): void {
    this.#timer = setInterval(() => void this.check(), MONITOR_VERSIONS_INTERVAL_MS);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** On the leader: asks the members, and records the version if it is new or higher. */
  async check(): Promise<void> {
    const host = this.#host;
    if (this.#busy || !host.isLeader()) return;
    // kvctl members all speak the same version: once it is recorded, nothing can raise it.
    const highest = decideClusterVersion([ETCD_SERVER_VERSION]);
    if (host.membership().version === highest) return;
    this.#busy = true;
    try {
      const versions = await Promise.all(host.membership().list().map((m) => (m.id === host.memberId ? ETCD_SERVER_VERSION : host.versionOf(m))));
      const v = versionToRecord(host.membership().version, decideClusterVersion(versions));
      if (v === undefined || !host.isLeader()) return;
      host.log.info(host.membership().version === undefined ? "setting up the initial cluster version" : "updating the cluster version", { "cluster-version": v });
      await host.record(v);
    } catch (err) {
      host.log.debug("cluster version proposal failed", { error: String(err) });
    } finally {
      this.#busy = false;
    }
  }
}
