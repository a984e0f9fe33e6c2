// Cluster membership: member and cluster IDs and each member's advertised URLs. IDs are
// derived as etcd derives them (a hash of the peer URLs and the cluster token; the cluster
// ID a hash of the member IDs), cut to 52 bits so they stay exact JS numbers. They print
// as lower-case hex without leading zeros, as etcd prints its IDs.
import { createHash } from "node:crypto";

export interface Member {
  id: number;
  name: string;
  peerUrls: string[];
  clientUrls: string[];
  /** A non-voting member (added as a learner, not promoted yet); absent = voter. */
  isLearner?: boolean;
}

/** 52 high bits of a SHA-1, never 0 (0 means "none" in Raft). */
function hash52(data: Buffer): number {
  const h = createHash("sha1").update(data).digest();
  const v = Number(h.readBigUInt64BE(0) >> 12n);
  return v === 0 ? 1 : v;
}

export function memberIdFor(peerUrls: readonly string[], token: string): number {
  return hash52(Buffer.from([...peerUrls].sort().join("") + token, "utf8"));
}

export function clusterIdFor(memberIds: readonly number[]): number {
  const b = Buffer.alloc(8 * memberIds.length);
  [...memberIds].sort((a, z) => a - z).forEach((id, i) => b.writeBigUInt64BE(BigInt(id), i * 8));
  return hash52(b);
}

export function idHex(id: number): string {
  return id.toString(16);
}

export interface MembershipJSON {
  clusterId: number;
  members: Member[];
  version?: string;
  removed?: number[];
}

/**
 * The replicated member list. Mutated only by apply (conf changes, attribute publishes).
 *
 * A member can be known before the entry that adds it is applied here: a member that joins
 * a running cluster learns the members from a peer, and one restarted without a snapshot
 * starts from the list its WAL was created with; the log then replays every add from the
 * first entry. Those members are provisional until their add applies: listed (the
 * transport dials them, clients see them, as etcd's in-memory cluster has them) but not
 * yet in the replicated state, so the add applies as on every other member (etcd validates
 * against its store, still empty then) and the image and state hash hold only applied
 * members. Without this a joined member refused its own add ("ID exists"): left out of its
 * own Raft configuration it could never campaign, and its v2 index lagged one per member.
 */
export class Membership {
  #members = new Map<number, Member>();
  #clusterId: number;
  /** The cluster version the leader recorded ("3.4.0"); undefined until the first leader does. */
  #version: string | undefined;
  /** Ids of removed members, kept for good as etcd keeps them: none of them is a member again. */
  #removed = new Set<number>();
  /** Known, but their add entry is not applied here yet (see above). */
  #provisional = new Set<number>();

  constructor(
    clusterId: number,
    members: Iterable<Member> = [],
    opts: { version?: string | undefined; removed?: Iterable<number> | undefined; provisional?: boolean } = {},
  ) {
    this.#clusterId = clusterId;
    for (const m of members) {
      this.#members.set(m.id, { ...m });
      if (opts.provisional === true) this.#provisional.add(m.id);
    }
    this.#version = opts.version;
    for (const id of opts.removed ?? []) this.#removed.add(id);
  }

  /**
   * The members of a running cluster as a joining member learns them: all provisional, no
   * removed ids (the log it replays from the first entry removes them again).
   */
  static joined(j: MembershipJSON): Membership {
    return new Membership(j.clusterId, j.members, { version: j.version, provisional: true });
  }

  /** The initial membership of a new cluster, the same on every member given the same flags. */
  static bootstrap(initialCluster: ReadonlyMap<string, string[]>, token: string): Membership {
    const members = [...initialCluster].map(([name, peerUrls]) => ({
      id: memberIdFor(peerUrls, token),
      name,
      peerUrls: [...peerUrls],
      clientUrls: [] as string[],
    }));
    return new Membership(clusterIdFor(members.map((m) => m.id)), members);
  }

  get clusterId(): number {
    return this.#clusterId;
  }

  get version(): string | undefined {
    return this.#version;
  }

  setVersion(v: string): void {
    this.#version = v;
  }

  /** A known member, provisional or applied. */
  get(id: number): Member | undefined {
    return this.#members.get(id);
  }

  /** A member whose add entry has applied here (what membership changes are validated against). */
  applied(id: number): Member | undefined {
    return this.#provisional.has(id) ? undefined : this.#members.get(id);
  }

  /** The applied members, sorted by id. */
  appliedList(): Member[] {
    return this.#provisional.size === 0 ? this.list() : this.list().filter((m) => !this.#provisional.has(m.id));
  }

  isProvisional(id: number): boolean {
    return this.#provisional.has(id);
  }

  /** Members sorted by id, as etcd lists them. */
  list(): Member[] {
    return [...this.#members.values()].sort((a, b) => a.id - b.id);
  }

  ids(): number[] {
    return this.list().map((m) => m.id);
  }

  /** How many members (voters and learners) the cluster has. */
  get size(): number {
    return this.#members.size;
  }

  /** Applies an add (or a promotion): the member is applied from now on. */
  add(m: Member): void {
    this.#members.set(m.id, { ...m });
    this.#provisional.delete(m.id);
  }

  remove(id: number): void {
    this.#members.delete(id);
    this.#provisional.delete(id);
    this.#removed.add(id);
  }

  /** Was this id a member that has been removed? */
  isRemoved(id: number): boolean {
    return this.#removed.has(id);
  }

  removedIds(): number[] {
    return [...this.#removed].sort((a, b) => a - b);
  }

  setAttributes(id: number, name: string, clientUrls: string[]): void {
    const m = this.#members.get(id);
    if (m) {
      m.name = name;
      m.clientUrls = [...clientUrls];
    }
  }

  /**
   * The replicated state (snapshot image, state hash): applied members only. `version` and
   * `removed` only once there are: the image (and state hash) of older states is unchanged.
   */
  toJSON(): MembershipJSON {
    return this.#json(this.appliedList());
  }

  /** Every known member, provisional ones included: what a peer asking for the members is told. */
  knownJSON(): MembershipJSON {
    return this.#json(this.list());
  }

  #json(members: Member[]): MembershipJSON {
    return {
      clusterId: this.#clusterId,
      members,
      ...(this.#version === undefined ? {} : { version: this.#version }),
      ...(this.#removed.size === 0 ? {} : { removed: this.removedIds() }),
    };
  }

  static fromJSON(j: MembershipJSON): Membership {
    return new Membership(j.clusterId, j.members, { version: j.version, removed: j.removed });
  }
}
