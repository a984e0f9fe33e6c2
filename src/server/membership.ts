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

/** The replicated member list. Mutated only by apply (conf changes, attribute publishes). */
export class Membership {
  #members = new Map<number, Member>();
  #clusterId: number;
  /** The cluster version the leader recorded ("3.4.0"); undefined until the first leader does. */
  #version: string | undefined;
  /** Ids of removed members, kept for good as etcd keeps them: none of them is a member again. */
  #removed = new Set<number>();

  constructor(clusterId: number, members: Iterable<Member> = [], opts: { version?: string | undefined; removed?: Iterable<number> | undefined } = {}) {
    this.#clusterId = clusterId;
    for (const m of members) this.#members.set(m.id, { ...m });
    this.#version = opts.version;
    for (const id of opts.removed ?? []) this.#removed.add(id);
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

  get(id: number): Member | undefined {
    return this.#members.get(id);
  }

  /** Members sorted by id, as etcd lists them. */
  list(): Member[] {
    return [...this.#members.values()].sort((a, b) => a.id - b.id);
  }

  ids(): number[] {
    return this.list().map((m) => m.id);
  }

  add(m: Member): void {
    this.#members.set(m.id, { ...m });
  }

  remove(id: number): void {
    this.#members.delete(id);
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

  /** `version` and `removed` only once there are: the image (and state hash) of older states is unchanged. */
  toJSON(): MembershipJSON {
    return {
      clusterId: this.#clusterId,
      members: this.list(),
      ...(this.#version === undefined ? {} : { version: this.#version }),
      ...(this.#removed.size === 0 ? {} : { removed: this.removedIds() }),
    };
  }

  static fromJSON(j: MembershipJSON): Membership {
    return new Membership(j.clusterId, j.members, { version: j.version, removed: j.removed });
  }
}
