// The peer-side endpoint: POST /raft (the message stream) and POST /raft/snapshot (one MsgSnap).
// Checks, in order, each answered like etcd's rafthttp handlers (text bodies, Go-style):
//   unknown path → 404; not POST → 405; stopped → 503;
//   X-Kv-Cluster-Id differs → 412 "cluster ID mismatch" (members of different clusters
//   refuse to talk; logged); X-Server-From missing → 400; removed sender → 410;
//   X-Raft-To not us → 412 "to field mismatch"; a frame too large → 413; undecodable →
//   400; a message not from the sender, not to us, or of a local type → 400.
// /raft delivers frames as they arrive (a one-shot POST of a whole batch is just a short
// stream); a bad frame after the stream was accepted cuts it. A snapshot request is all
// or nothing: Raft sees it only when the whole body decoded and passed the checks.

import type { IncomingMessage, ServerResponse } from "node:http";
import { open, rm } from "node:fs/promises";
import { Header } from "../api/headers.ts";
import { MessageType, isLocalMsg, messageTypeName, type Message } from "../raft/index.ts";
import { performance } from "node:perf_hooks";
import { CodecError, FrameReader, FrameTooLargeError, decodeBatch } from "./codec.ts";
import { PeerHeader, idHex, parseIdHex, type TransportLimits, type TransportLogger } from "./types.ts";

export const raftPath = "/raft";
/** One byte on the stream's answer: "received and read". */
const ACK = Buffer.from([0x0a]);
/** Acknowledgements are at most this frequent (and at most this late). */
export const ackIntervalMs = 100;
export const snapshotPath = "/raft/snapshot";

export interface Delivery {
  from: number;
  /** The sender's advertised peer URLs (X-Peer-Urls), empty when not sent. */
  fromUrls: string[];
  messages: Message[];
  /** Encoded size of each message (frame bytes). */
  sizes: number[];
  snapshot: boolean;
  /** The database file received with a MsgSnap (written and synced), when the sender sent one. */
  snapshotDb?: string;
  /** When the bytes that completed these messages were read (performance.now()). */
  readAt?: number;
}

export interface HandlerContext {
  readonly memberId: number;
  readonly clusterId: number;
  readonly logger: TransportLogger;
  readonly limits: TransportLimits;
  isStopped(): boolean;
  /** True for a member removed from the cluster: its requests are answered 410 Gone. */
  isRemoved(id: number): boolean;
  /** Hands decoded messages to Raft; may throw (answered 500). */
  deliver(d: Delivery): void;
  /** A fresh path to write a database file received with a snapshot into; without it such snapshots are refused. */
  snapshotDbPath?(): string;
  /** Received bytes that did not decode, from `remoteAddr` ("ip:port", etcd's label for them). */
  onReceiveFailed?(remoteAddr: string): void;
}

/** The body a removed member's requests get (etcd's wording). */
export const REMOVED_MESSAGE = "the member has been permanently removed from the cluster";

function reply(res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff", ...extra });
  res.end(text + "\n");
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

/** Reads the body up to `limit` bytes; undefined (after answering 413) when larger. */
function readBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const declared = Number(header(req, "content-length") ?? "0");
    const tooLarge = (): void => {
      // Connection: close makes node drop the socket instead of draining a huge body.
      reply(res, 413, `request body larger than ${limit} bytes`, { Connection: "close" });
      resolve(undefined);
    };
    if (declared > limit) return tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on("data", (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > limit) {
        done = true;
        tooLarge();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => {
      if (!done) resolve(Buffer.concat(chunks, size));
    });
    // An aborted upload: nothing to answer, the socket is gone.
    req.on("error", () => resolve(undefined));
    req.on("aborted", () => resolve(undefined));
  });
}

/**
 * Reads a snapshot body whose first `headBytes` are the message (kept in memory) and whose
 * rest is the database file, streamed to `dbPath` and synced. Undefined when the upload
 * ended early or the file could not be written.
 */
async function readSplitBody(req: IncomingMessage, headBytes: number, dbPath: string): Promise<Buffer | undefined> {
  const head = Buffer.allocUnsafe(headBytes);
  let got = 0;
  const fh = await open(dbPath, "w", 0o600);
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      let c = chunk;
      if (got < headBytes) {
        const n = Math.min(headBytes - got, c.length);
        c.copy(head, got, 0, n);
        got += n;
        c = c.subarray(n);
      }
      if (c.length > 0) await fh.write(c);
    }
    if (!req.complete || got < headBytes) return undefined;
    await fh.sync();
    return head;
  } catch {
    return undefined;
  } finally {
    await fh.close();
  }
}

/** The first reason to refuse the decoded messages, or undefined when all are acceptable. */
function refusal(ctx: HandlerContext, from: number, msgs: Message[], snapshot: boolean): string | undefined {
  if (snapshot && (msgs.length !== 1 || msgs[0]!.type !== MessageType.MsgSnap || msgs[0]!.snapshot === undefined)) {
    return "snapshot request must carry exactly one MsgSnap with its snapshot";
  }
  for (const m of msgs) {
    if (m.to !== ctx.memberId) return `message addressed to member ${idHex(m.to)}, this is ${idHex(ctx.memberId)}`;
    if (m.from !== from) return `message from ${idHex(m.from)} sent by member ${idHex(from)}`;
    if (isLocalMsg(m.type)) return `local message type ${messageTypeName(m.type)} from a peer`;
    if (!snapshot && m.type === MessageType.MsgSnap) return "MsgSnap outside the snapshot path";
  }
  return undefined;
}

export function createHandler(ctx: HandlerContext): (req: IncomingMessage, res: ServerResponse) => void {
  const cid = idHex(ctx.clusterId);
  const local = idHex(ctx.memberId);
  return (req, res) => {
    void handle(req, res).catch((err: unknown) => {
      ctx.logger.error("failed to process raft message", { localMemberId: local, error: String(err) });
      reply(res, 500, "error processing raft message");
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?", 1)[0];
    const snapshot = path === snapshotPath;
    if (path !== raftPath && !snapshot) return reply(res, 404, "404 page not found");
    if (req.method !== "POST") return reply(res, 405, "Method Not Allowed", { Allow: "POST" });
    res.setHeader(Header.kvClusterId, cid);
    if (ctx.isStopped()) return reply(res, 503, "transport stopped");

    const remoteCid = header(req, PeerHeader.clusterId);
    const fromHeader = header(req, PeerHeader.from);
    if (parseIdHex(remoteCid) !== ctx.clusterId) {
      ctx.logger.warn("refused peer request: cluster ID mismatch (members of different clusters refuse to talk)", {
        localMemberId: local,
        localClusterId: cid,
        remotePeerId: fromHeader ?? "",
        remoteClusterId: remoteCid ?? "",
        remoteAddr: req.socket.remoteAddress ?? "",
      });
      return reply(res, 412, "cluster ID mismatch");
    }
    const from = parseIdHex(fromHeader);
    if (from === undefined) return reply(res, 400, `missing or invalid ${PeerHeader.from} header`);
    // A removed member does not learn of its removal through Raft (the leader stops talking
    // to it): peers tell it when it next writes, as etcd's rafthttp does, and it stops.
    if (ctx.isRemoved(from)) {
      req.resume();
      return reply(res, 410, REMOVED_MESSAGE);
    }
    const to = parseIdHex(header(req, PeerHeader.to));
    if (to !== ctx.memberId) {
      ctx.logger.warn("refused peer request: addressed to another member", {
        localMemberId: local,
        remotePeerId: idHex(from),
        to: header(req, PeerHeader.to) ?? "",
      });
      return reply(res, 412, "to field mismatch");
    }

    const urls = header(req, PeerHeader.peerUrls);
    const fromUrls = urls === undefined || urls === "" ? [] : urls.split(",");
    if (snapshot) return receiveSnapshot(req, res, from, fromUrls);
    receiveStream(req, res, from, fromUrls);
  }

  function refuse(from: number, why: string): void {
    ctx.logger.warn("refused raft messages", { localMemberId: local, remotePeerId: idHex(from), reason: why });
  }

  function deliver(d: Delivery): void {
    try {
      ctx.deliver(d);
    } catch (err) {
      ctx.logger.error("failed to process raft messages", { localMemberId: local, remotePeerId: idHex(d.from), error: String(err) });
    }
  }

  async function receiveSnapshot(req: IncomingMessage, res: ServerResponse, from: number, fromUrls: string[]): Promise<void> {
    const dbHeader = header(req, PeerHeader.snapshotDbBytes);
    let snapshotDb: string | undefined;
    let body: Buffer | undefined;
    if (dbHeader !== undefined) {
      const dbBytes = Number(dbHeader);
      const total = Number(header(req, "content-length") ?? "NaN");
      if (!Number.isSafeInteger(dbBytes) || dbBytes < 0 || !Number.isSafeInteger(total) || total < dbBytes) {
        req.resume();
        return reply(res, 400, `bad ${PeerHeader.snapshotDbBytes} header`);
      }
      if (ctx.snapshotDbPath === undefined) {
        req.resume();
        return reply(res, 400, "this member cannot receive a snapshot database");
      }
      if (total - dbBytes > ctx.limits.maxReceiveSnapshotBytes) {
        return reply(res, 413, `request body larger than ${ctx.limits.maxReceiveSnapshotBytes} bytes`, { Connection: "close" });
      }
      snapshotDb = ctx.snapshotDbPath();
      body = await readSplitBody(req, total - dbBytes, snapshotDb);
      if (body === undefined) {
        await rm(snapshotDb, { force: true });
        return reply(res, 400, "snapshot body ended early");
      }
    } else {
      body = await readBody(req, res, ctx.limits.maxReceiveSnapshotBytes);
    }
    if (body === undefined) return;
    const drop = (): void => {
      if (snapshotDb !== undefined) void rm(snapshotDb, { force: true });
    };
    let messages: Message[];
    const sizes: number[] = [];
    try {
      messages = decodeBatch(body, sizes);
    } catch (err) {
      if (!(err instanceof CodecError)) throw err;
      ctx.logger.warn("failed to decode raft messages", { localMemberId: local, remotePeerId: idHex(from), error: err.message });
      ctx.onReceiveFailed?.(`${req.socket.remoteAddress}:${req.socket.remotePort}`);
      drop();
      return reply(res, 400, err.message);
    }
    const why = refusal(ctx, from, messages, true);
    if (why !== undefined) {
      refuse(from, why);
      drop();
      return reply(res, 400, why);
    }
    res.writeHead(204);
    res.end();
    deliver({ from, fromUrls, messages, sizes, snapshot: true, ...(snapshotDb === undefined ? {} : { snapshotDb }) });
  }

  /**
   * The message stream: frames are decoded and handed to Raft as they arrive, for as long
   * as the sender keeps the request open. The answer's head (200) goes out with the first
   * acknowledgement, after the first chunk was checked, so a sender whose very first
   * frames are refused still gets a status and a reason; a later bad frame can only cut
   * the stream. Acknowledgements (one byte) tell the sender we are alive and reading: at
   * most one per ackIntervalMs, and always one within that time after data arrived, so a
   * sender waiting on one never waits in vain.
   */
  function receiveStream(req: IncomingMessage, res: ServerResponse, from: number, fromUrls: string[]): void {
    const reader = new FrameReader(ctx.limits.maxReceiveBatchBytes);
    let accepted = false;
    let dead = false;
    let lastAck = -Infinity;
    let ackTimer: NodeJS.Timeout | undefined;
    const sendAck = (): void => {
      ackTimer = undefined;
      if (dead || res.writableEnded || res.destroyed) return;
      lastAck = performance.now();
      res.write(ACK);
    };
    const ack = (): void => {
      const wait = lastAck + ackIntervalMs - performance.now();
      if (wait <= 0) sendAck();
      else ackTimer ??= setTimeout(sendAck, wait);
    };
    const fail = (status: number, why: string): void => {
      dead = true;
      clearTimeout(ackTimer);
      if (!accepted) {
        reply(res, status, why, { Connection: "close" });
        req.resume();
      } else req.destroy();
    };
    req.on("data", (chunk: Buffer) => {
      if (dead) return;
      const readAt = performance.now();
      if (ctx.isStopped()) return fail(503, "transport stopped");
      // Removed while its stream was open (streams stay open for good): cut it, so the
      // sender re-dials and is answered 410, which is how it learns it was removed.
      if (ctx.isRemoved(from)) return fail(410, REMOVED_MESSAGE);
      const sizes: number[] = [];
      let messages: Message[];
      try {
        messages = reader.push(chunk, sizes);
      } catch (err) {
        if (!(err instanceof CodecError)) throw err;
        ctx.logger.warn("failed to decode raft messages", { localMemberId: local, remotePeerId: idHex(from), error: err.message });
        ctx.onReceiveFailed?.(`${req.socket.remoteAddress}:${req.socket.remotePort}`);
        return fail(err instanceof FrameTooLargeError ? 413 : 400, err.message);
      }
      const why = refusal(ctx, from, messages, false);
      if (why !== undefined) {
        refuse(from, why);
        return fail(400, why);
      }
      if (!accepted) {
        accepted = true;
        res.writeHead(200, { "Content-Type": "application/octet-stream" });
      }
      // Acknowledge first, then deliver: delivery may itself send (a follower's append
      // response), and the sender should learn we are alive without waiting on Raft.
      ack();
      if (messages.length > 0) deliver({ from, fromUrls, messages, sizes, snapshot: false, readAt });
    });
    req.on("end", () => {
      if (dead) return;
      dead = true;
      clearTimeout(ackTimer);
      if (reader.partial || !accepted) {
        const why = accepted || reader.partial ? "Cannot decode raft batch: truncated frame at the end of the stream" : "Cannot decode raft batch: empty body";
        if (!accepted) return reply(res, 400, why);
        return void req.destroy();
      }
      res.end();
    });
    req.on("close", () => {
      dead = true;
      clearTimeout(ackTimer);
    });
  }
}
