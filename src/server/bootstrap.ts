// Opening a member's data dir, in one of three ways:
// - restart: the newest valid snapshot, then the WAL entries after it (torn tail repaired);
// - new cluster (--initial-cluster-state new): the membership is derived from the flags,
//   identically on every member, and Raft is bootstrapped with the same conf changes;
// - join (--initial-cluster-state existing): the membership (and so the cluster id and our
//   member id, assigned when `member add` ran) is fetched from a running member's peer URL;
//   Raft starts empty and the leader sends it the log or a snapshot.
import { mkdir, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { MemoryStorage, EntryType, retainEntryData, type ConfState } from "../raft/index.ts";
import { Wal, Snapshotter } from "../wal/index.ts";
import { V2Store } from "../store/v2/store.ts";
import { DEFAULT_SIMPLE_TOKEN_TTL_MS, V2AuthState, V3AuthState, type V2AuthImage, type V3AuthImage, type V3AuthStateOptions } from "../auth/index.ts";
import { V3KeySpace, type KeySpaceImage } from "../store/v3/index.ts";
import { DEFAULT_COMMIT_DELAY_MS, DEFAULT_COMMIT_LIMIT, MvccDb, type MvccDbOptions } from "../backend/index.ts";
import { createAgent, peerGet, type PeerTlsClient } from "../transport/index.ts";
import { Membership, type Member } from "./membership.ts";
import { srvClusterFromConfig } from "./discovery-srv.ts";
import { standaloneLog } from "./force-new-cluster.ts";
import { brokenSnapshots, brokenSnapshotsWarning, passedOver, walWithoutSnapshotError } from "./backup/broken-snapshots.ts";
import { decodeSnapshotData, type SnapshotState } from "./snapshot-data.ts";
import type { Logger } from "./logger.ts";
import type { ServerConfig } from "./config.ts";

/** What the WAL metadata records: who this member is, in which cluster. */
export interface WalMetadata {
  memberId: number;
  clusterId: number;
  members: Member[];
}

/**
 * What a snapshot holds: the whole replicated state machine, in the shape of format 1 (one
 * JSON text, snapshot-data.ts); format 2 holds the same parts with the store as lines.
 */
export interface SnapshotImage {
  /** The v2 store's image, version 1. */
  store: string;
  membership: ReturnType<Membership["toJSON"]>;
  /** v2 users, roles and the enabled flag (absent in images written before access control). */
  auth?: V2AuthImage;
  /** The v3 key space and leases (absent in images written before the v3 API). */
  v3?: KeySpaceImage;
  /** v3 users and roles (tokens are not kept: they end with the process, as etcd's). */
  v3auth?: V3AuthImage;
}

/** v3 access control from an image (empty when the image predates it). */
export function restoreV3Auth(image: Pick<SnapshotImage, "v3auth">, opts: V3AuthStateOptions = {}): V3AuthState {
  return image.v3auth === undefined ? new V3AuthState(opts) : V3AuthState.fromImage(image.v3auth, opts);
}

/**
 * The v3 auth options --auth-token-ttl gives: the idle lifetime of simple tokens. As in
 * etcd (tokenSimple.enable), 0 means the default 300 s rather than tokens that never live.
 */
export function v3AuthOptions(config: Pick<ServerConfig, "authTokenTtl">): V3AuthStateOptions {
  return { tokenTtlMs: config.authTokenTtl > 0 ? config.authTokenTtl * 1000 : DEFAULT_SIMPLE_TOKEN_TTL_MS };
}

/**
 * The v3 database of a data dir, committed every --backend-batch-interval (500 ms when the
 * flag is 0, see DEFAULT_COMMIT_DELAY_MS) or once --backend-batch-limit writes wait, with
 * lease checkpoints written when they are to persist and
 * compactions deleting --experimental-compaction-batch-limit records per transaction.
 */
export function v3DbOptions(config: Pick<ServerConfig, "dataDir" | "backendBatch" | "leaseCheckpoint" | "compactionBatchLimit">): MvccDbOptions {
  const every = config.backendBatch.intervalMs;
  return {
    path: v3DbPath(config.dataDir),
    commitDelayMs: every > 0 ? every : DEFAULT_COMMIT_DELAY_MS,
    commitLimit: config.backendBatch.limit > 0 ? config.backendBatch.limit : DEFAULT_COMMIT_LIMIT,
    persistLeaseCheckpoints: config.leaseCheckpoint.persist,
    compactionBatchLimit: config.compactionBatchLimit,
  };
}

/** Where the v3 key space's database lives (etcd's bbolt file is member/snap/db too). */
export function v3DbPath(dataDir: string): string {
  return join(dataDir, "member", "snap", "db");
}

/** Where a database received with the leader's snapshot at `index` waits for its install (etcd's name). */
export function receivedDbPath(dataDir: string, index: number): string {
  return join(dataDir, "member", "snap", `${index.toString(16).padStart(16, "0")}.snap.db`);
}

/**
 * Before the database opens on a restart: a crash while a leader's snapshot was being
 * installed can leave the snapshot recorded and its database still under its received
 * name, beside the member's older file; that file is the key space at the snapshot, so it
 * takes the member's file's place (etcd's recovery of `<index>.snap.db`). Received files of
 * other snapshots, and copies made for followers or backups, are left-overs and go.
 */
export async function adoptReceivedDb(dataDir: string, snapshotIndex: number, log: Logger): Promise<void> {
  const dir = join(dataDir, "member", "snap");
  const current = snapshotIndex > 0 ? receivedDbPath(dataDir, snapshotIndex) : undefined;
  for (const name of await readdir(dir)) {
    const path = join(dir, name);
    if (path === current) {
      await rename(path, v3DbPath(dataDir));
      await rm(`${path}-lock`, { force: true });
      log.warn("installed the v3 database received with the last snapshot (the install was interrupted)", { snapshotIndex });
    } else if (/^[0-9a-f]{16}\.snap\.db(-lock)?$|^(recv|send|image)-[0-9a-f]+\.db(-lock)?$|^backup-[0-9a-f]+\.tmp$/.test(name)) {
      await rm(path, { force: true });
    }
  }
}

/**
 * The v3 key space from its database. An image from before the database (the key space was
 * part of the snapshot) is written into an empty database once, at the image's index.
 */
export function openKeySpace(db: MvccDb, image: { v3?: KeySpaceImage | undefined } | undefined, imageIndex: number): V3KeySpace {
  if (db.consistentIndex === 0 && image?.v3 !== undefined) {
    const ks = V3KeySpace.fromImage(image.v3, db);
    db.commit(imageIndex);
    return ks;
  }
  return V3KeySpace.restore(db.load(), db);
}

/** Removes a database left by an earlier member in this data dir (a new member starts empty). */
async function removeDb(path: string): Promise<void> {
  await rm(path, { force: true });
  await rm(`${path}-lock`, { force: true });
}

export interface OpenedMember {
  wal: Wal;
  snapshotter: Snapshotter;
  storage: MemoryStorage;
  store: V2Store;
  auth: V2AuthState;
  v3: V3KeySpace;
  /** The v3 key space's database (its consistent index says which entries it holds). */
  v3db: MvccDb;
  v3auth: V3AuthState;
  membership: Membership;
  memberId: number;
  appliedIndex: number;
  confState: ConfState;
  /** Voters to bootstrap Raft with: only for the very first start of a new cluster. */
  bootstrapPeers?: number[];
}

/** A snapshot's parts, decoded from either format without one string of the whole (snapshot-data.ts). */
export function decodeSnapshotImage(data: Uint8Array): SnapshotState {
  return decodeSnapshotData(data);
}

export function encodeConfState(cs: ConfState): Buffer {
  return Buffer.from(JSON.stringify(cs));
}

/** Where the WAL lives: --wal-dir (the segment files directly in it, as etcd), else `<data-dir>/member/wal`. */
export function walDirOf(config: Pick<ServerConfig, "dataDir" | "walDir">): string {
  return config.walDir !== "" ? config.walDir : join(config.dataDir, "member", "wal");
}

/** Test hooks that are no flags: small WAL segments make segment retention observable. */
export interface OpenMemberOptions {
  walSegmentBytes?: number;
}

export async function openMember(config: ServerConfig, log: Logger, peerTls?: PeerTlsClient, opts: OpenMemberOptions = {}): Promise<OpenedMember> {
  const memberDir = join(config.dataDir, "member");
  const walDir = walDirOf(config);
  const snapDir = join(memberDir, "snap");
  // --discovery: the initial cluster comes from the discovery service, once, before the
  // first start; before member/ exists, so a full token that makes this a proxy leaves no
  // member's directory behind.
  if (config.discovery !== "" && config.initialClusterState === "new" && !Wal.exists(walDir)) {
    const { joinDiscoveryCluster } = await import("./discovery.ts");
    const initialCluster = await joinDiscoveryCluster(config.discovery, config.name, config.initialAdvertisePeerUrls, { log, ...(config.discoveryProxy === undefined ? {} : { proxy: config.discoveryProxy }) });
    config = { ...config, initialCluster, initialClusterToken: config.discovery };
  }
  await mkdir(snapDir, { recursive: true, mode: 0o700 });
  const snapshotter = new Snapshotter(snapDir, { logger: log });
  const walOpts = opts.walSegmentBytes === undefined ? {} : { segmentBytes: opts.walSegmentBytes };
  if (Wal.exists(walDir)) return restart(config, walDir, snapshotter, log, walOpts);
  // The data dir's own WAL, when --wal-dir names another (empty) place: starting as a new
  // member here would throw the data away (the v3 database is removed below).
  const defaultWalDir = join(memberDir, "wal");
  if (walDir !== defaultWalDir && Wal.exists(defaultWalDir)) {
    throw new Error(`--wal-dir ${walDir} holds no WAL but ${defaultWalDir} does: move the WAL files there, or start without --wal-dir`);
  }
  if (config.forceNewCluster) throw new Error(`--force-new-cluster needs an existing member's data: no WAL in ${walDir}`);
  await removeDb(v3DbPath(config.dataDir));
  // --discovery-srv: the initial cluster comes from DNS, once, before the first start.
  if (config.discoverySrv !== "") config = { ...config, initialCluster: await srvClusterFromConfig(config, log, { requireLocal: true }) };
  if (config.initialClusterState === "new") return createNew(config, walDir, snapshotter, log, peerTls, walOpts);
  return joinExisting(config, walDir, snapshotter, log, peerTls, walOpts);
}

async function restart(config: ServerConfig, walDir: string, snapshotter: Snapshotter, log: Logger, walOpts: { segmentBytes?: number }): Promise<OpenedMember> {
  const storage = new MemoryStorage();
  const snap = await snapshotter.loadNewest();
  let store = new V2Store();
  let auth = new V2AuthState();
  let v3auth = new V3AuthState(v3AuthOptions(config));
  let image: SnapshotState | undefined;
  let membership: Membership | undefined;
  let confState: ConfState = { voters: [], learners: [] };
  let ref = { index: 0, term: 0 };
  if (snap) {
    image = decodeSnapshotImage(snap.data);
    store = V2Store.recover(image.store);
    if (image.auth !== undefined) auth = V2AuthState.recover(image.auth);
    v3auth = restoreV3Auth(image, v3AuthOptions(config));
    membership = Membership.fromJSON(image.membership);
    confState = JSON.parse(Buffer.from(snap.meta).toString("utf8")) as ConfState;
    storage.applySnapshot({ data: snap.data, metadata: { index: snap.index, term: snap.term, confState } });
    ref = { index: snap.index, term: snap.term };
  }
  const snapDir = join(config.dataDir, "member", "snap");
  const broken = await brokenSnapshots(snapDir);
  const brokenWarning = brokenSnapshotsWarning(broken, ref.index);
  if (brokenWarning !== undefined) log.warn(brokenWarning, { dir: snapDir, files: broken.map((b) => `${b.name}${b.intact ? " (intact)" : ""}`) });
  // Replayed entries go straight where the raft log keeps its entries (one copy, not two).
  const opened = await Wal.open(walDir, { snapshot: ref, logger: log, retain: retainEntryData, ...walOpts }).catch((err: unknown) => {
    const over = passedOver(broken, ref.index);
    throw over.length > 0 ? walWithoutSnapshotError(err, snapDir, over) : err;
  });
  if (opened.repaired) {
    log.warn("repaired a torn WAL tail", { file: opened.repaired.file, offset: opened.repaired.offset, droppedBytes: opened.repaired.droppedBytes });
  }
  const meta = JSON.parse(Buffer.from(opened.metadata).toString("utf8")) as WalMetadata;
  // A crash while installing a snapshot from the leader can leave the snapshot on disk and
  // the hard state that goes with it not: the WAL's commit is then below the snapshot. The
  // snapshot holds only state the cluster committed (a leader sends nothing else), so its
  // index is a known commit point; Raft refuses to start with a commit below its snapshot.
  const hardState = opened.hardState.commit < ref.index ? { ...opened.hardState, commit: ref.index } : opened.hardState;
  if (hardState !== opened.hardState) {
    log.warn("raised the WAL commit index to the snapshot's (crash during a snapshot install)", { walCommit: opened.hardState.commit, snapshotIndex: ref.index });
  }
  // The WAL stores the entry type as a plain number; Raft's type is the 0|1 union.
  let entries = opened.entries.map((e) => ({ ...e, type: e.type === 1 ? EntryType.ConfChange : EntryType.Normal }));
  let startState = hardState;
  await adoptReceivedDb(config.dataDir, ref.index, log);
  const v3db = MvccDb.open(v3DbOptions(config));
  if (config.forceNewCluster) {
    const members = membership ?? new Membership(meta.clusterId, meta.members);
    const self = members.get(meta.memberId) ?? { id: meta.memberId, name: config.name, peerUrls: [...config.initialAdvertisePeerUrls], clientUrls: [] };
    // Entries the v3 database holds were applied, so committed, even if the WAL's commit
    // record lags (it can be lost with an OS crash): they are kept.
    const lastIndex = entries.at(-1)?.index ?? ref.index;
    const committed = Math.max(hardState.commit, Math.min(v3db.consistentIndex, lastIndex));
    const s = standaloneLog({ entries, hardState: { ...hardState, commit: committed }, confState, selfId: meta.memberId, self, knownIds: members.ids() });
    // Durable before Raft starts: a crash from here on restarts (with or without the flag)
    // as the one-member cluster, never as the old one with a half-forced log.
    await opened.wal.save(s.hardState, s.appended);
    entries = s.entries;
    startState = s.hardState;
    log.warn("forcing a new one-member cluster from this member's data (--force-new-cluster)", {
      memberId: meta.memberId.toString(16),
      clusterId: meta.clusterId.toString(16),
      commit: startState.commit,
      discardedUncommittedEntries: s.discarded,
      removedMembers: s.removed.map((id) => id.toString(16)),
    });
  }
  storage.setHardState(startState);
  const v3 = openKeySpace(v3db, image, ref.index);
  storage.append(entries);
  log.info("restarted member", {
    memberId: meta.memberId.toString(16),
    clusterId: meta.clusterId.toString(16),
    snapshotIndex: ref.index,
    walEntries: opened.entries.length,
    commit: startState.commit,
    v3ConsistentIndex: v3db.consistentIndex,
    v3Revision: v3.revision,
  });
  return {
    wal: opened.wal,
    snapshotter,
    storage,
    store,
    auth,
    v3,
    v3db,
    v3auth,
    // Without a snapshot the log is replayed from its first entry, adds included.
    membership: membership ?? new Membership(meta.clusterId, meta.members, { provisional: true }),
    memberId: meta.memberId,
    appliedIndex: ref.index,
    confState,
  };
}

async function createNew(config: ServerConfig, walDir: string, snapshotter: Snapshotter, log: Logger, peerTls: PeerTlsClient | undefined, walOpts: { segmentBytes?: number }): Promise<OpenedMember> {
  const membership = Membership.bootstrap(config.initialCluster, config.initialClusterToken);
  const me = membership.list().find((m) => m.name === config.name);
  if (!me) throw new Error(`couldn't find local name "${config.name}" in the initial cluster configuration`);
  const others = membership.list().filter((m) => m.id !== me.id).flatMap((m) => m.peerUrls);
  if (await bootstrappedElsewhere(me.id, others, peerTls)) throw new Error(`member ${me.id.toString(16)} has already been bootstrapped`);
  const m = await freshMember(walDir, snapshotter, membership, me.id, log, v3DbOptions(config), v3AuthOptions(config), walOpts);
  log.info("started new member", { memberId: me.id.toString(16), clusterId: membership.clusterId.toString(16), members: membership.ids().length });
  return { ...m, bootstrapPeers: membership.ids() };
}

/**
 * etcd's isMemberBootstrapped: a member started `new` without a WAL whose id a peer lists
 * with client URLs (it ran and published them) lost its data dir. Started afresh it would
 * be a second member of that id with an empty log, so, as etcd, it refuses to start
 * ("member <id> has already been bootstrapped", exit 1): the fix is `member remove` and
 * `member add`, or the data dir back. The first peer that answers decides, each asked for
 * at most a second (etcd's bootstrap timeout); no answer, or another cluster's list (a
 * different --initial-cluster-token gives another id), is no evidence.
 */
export async function bootstrappedElsewhere(id: number, peerUrls: readonly string[], peerTls?: PeerTlsClient, timeoutMs = 1000): Promise<boolean> {
  if (peerUrls.length === 0) return false;
  const agent = createAgent({ keepAlive: false }, peerTls);
  for (const url of peerUrls) {
    try {
      const res = await peerGet(new URL(PEER_MEMBERS_PATH, url), { agent, timeoutMs });
      if (res.status !== 200) continue;
      const listed = Membership.joined(JSON.parse(res.body) as ReturnType<Membership["toJSON"]>).get(id);
      return listed !== undefined && listed.clientUrls.length > 0;
    } catch {
      // not up (yet): etcd asks the next one
    }
  }
  return false;
}

/** The cluster's members and the ones --initial-cluster names do not match (etcd's ValidateClusterAndAssignIDs). */
export class PeerUrlsMismatchError extends Error {
  override readonly name = "PeerUrlsMismatchError";
}

/**
 * etcd's ValidateClusterAndAssignIDs for a member joining with `existing`: --initial-cluster
 * must list as many members as the cluster has, and each member of the cluster must match
 * one of them by peer URLs (resolved), else "error validating peerURLs <cluster>: member
 * count is unequal" / "PeerURLs: no match found for existing member (...)", exit 1. A list
 * that still names a removed member, or one not added yet, is caught here instead of
 * joining with a configuration the operator did not mean.
 */
export async function validateAgainstExisting(initialCluster: ReadonlyMap<string, readonly string[]>, existing: Membership): Promise<void> {
  // In peer URL order: the message names the same members the same way whatever their ids.
  const members = existing.list().sort((a, b) => (a.peerUrls.join(",") < b.peerUrls.join(",") ? -1 : 1));
  const described = `{ClusterID:${existing.clusterId.toString(16)} Members:[${members.map((m) => `${m.id.toString(16)}=${m.peerUrls.join(",")}`).join(" ")}]}`;
  if (members.length !== initialCluster.size) throw new PeerUrlsMismatchError(`error validating peerURLs ${described}: member count is unequal`);
  const local = await Promise.all([...initialCluster.values()].map((urls) => resolvedUrls(urls)));
  for (const m of members) {
    const theirs = await resolvedUrls(m.peerUrls);
    // As this member finds itself among them: a resolved URL in common (localhost may resolve to ::1 too).
    if (!local.some((mine) => [...mine].some((u) => theirs.has(u)))) {
      throw new PeerUrlsMismatchError(`error validating peerURLs ${described}: PeerURLs: no match found for existing member (${m.id.toString(16)}, [${m.peerUrls.join(" ")}])`);
    }
  }
}

/** An empty state machine and a new WAL whose metadata says who this member is. */
async function freshMember(walDir: string, snapshotter: Snapshotter, membership: Membership, memberId: number, log: Logger, dbOpts: MvccDbOptions, authOpts: V3AuthStateOptions, walOpts: { segmentBytes?: number }): Promise<OpenedMember> {
  const v3db = MvccDb.open(dbOpts);
  const meta: WalMetadata = { memberId, clusterId: membership.clusterId, members: membership.list() };
  const wal = await Wal.create(walDir, Buffer.from(JSON.stringify(meta)), { logger: log, ...walOpts });
  return {
    wal,
    snapshotter,
    storage: new MemoryStorage(),
    store: new V2Store(),
    auth: new V2AuthState(),
    v3: new V3KeySpace({ backend: v3db }),
    v3db,
    v3auth: new V3AuthState(authOpts),
    membership,
    memberId,
    appliedIndex: 0,
    confState: { voters: [], learners: [] },
  };
}

/**
 * URLs with their host names resolved (scheme://address:port), so a member finds itself in
 * the cluster's list however either side spelled its host (etcd compares resolved URLs:
 * `localhost` and `127.0.0.1` are the same member). An unresolvable host stays as written.
 */
export async function resolvedUrls(urls: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const raw of urls) {
    const u = new URL(raw);
    out.add(u.href);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    if (isIP(host) !== 0) continue;
    try {
      for (const a of await lookup(host, { all: true })) out.add(`${u.protocol}//${a.family === 6 ? `[${a.address}]` : a.address}:${u.port}`);
    } catch {
      // not resolvable here: only the spelling as written can match
    }
  }
  for (const h of [...out]) out.add(new URL(h).href);
  return out;
}

/** The peer-port endpoint a joining member reads the cluster's membership from. */
export const PEER_MEMBERS_PATH = "/members";

async function joinExisting(config: ServerConfig, walDir: string, snapshotter: Snapshotter, log: Logger, peerTls: PeerTlsClient | undefined, walOpts: { segmentBytes?: number }): Promise<OpenedMember> {
  const mine = await resolvedUrls(config.initialAdvertisePeerUrls);
  const others = [...config.initialCluster.entries()].filter(([name]) => name !== config.name).flatMap(([, urls]) => urls);
  if (others.length === 0) {
    throw new Error("--initial-cluster-state=existing needs the running members' peer URLs in --initial-cluster");
  }
  const errors: string[] = [];
  const agent = createAgent({ keepAlive: false }, peerTls);
  for (const url of others) {
    try {
      const res = await peerGet(new URL(PEER_MEMBERS_PATH, url), { agent, timeoutMs: 2000 });
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      const membership = Membership.joined(JSON.parse(res.body) as ReturnType<Membership["toJSON"]>);
      let me: Member | undefined;
      for (const m of membership.list()) {
        const theirs = await resolvedUrls(m.peerUrls);
        if ([...theirs].some((u) => mine.has(u))) {
          me = m;
          break;
        }
      }
      if (!me) {
        throw new Error(`this member (peer URLs ${config.initialAdvertisePeerUrls.join(",")}) is not in the cluster: add it first with 'kvctl member add'`);
      }
      await validateAgainstExisting(config.initialCluster, membership);
      const m = await freshMember(walDir, snapshotter, membership, me.id, log, v3DbOptions(config), v3AuthOptions(config), walOpts);
      log.info("joining existing cluster", { memberId: me.id.toString(16), clusterId: membership.clusterId.toString(16), via: url });
      return m;
    } catch (err) {
      errors.push(`${url}: ${err instanceof Error ? err.message : String(err)}`);
      if (err instanceof Error && (err.message.includes("is not in the cluster") || err instanceof PeerUrlsMismatchError)) throw err;
    }
  }
  throw new Error(`cannot join the existing cluster: no member answered (${errors.join("; ")})`);
}
