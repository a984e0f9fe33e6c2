// Test fixtures: a member = an HTTP server on 127.0.0.1 + a PeerTransport behind it,
// recording what it receives and what it reports. Test-only (imported by *.test.ts).

import http from "node:http";
import { after } from "node:test";
import type { AddressInfo } from "node:net";
import { MessageType, message, type Message } from "../raft/index.ts";
import { PeerTransport, type PeerTransportOptions } from "./transport.ts";
import type { TransportLimits, TransportLogger } from "./types.ts";
import { until } from "../until.test-helper.ts";

export interface LogLine {
  level: "debug" | "info" | "warn" | "error";
  msg: string;
  fields: Record<string, unknown>;
}

export function recordingLogger(): { logger: TransportLogger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine["level"]) =>
    (msg: string, fields: Record<string, unknown> = {}): void => {
      lines.push({ level, msg, fields });
    };
  return { logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }, lines };
}

/** Polls `cond` until it holds; fails after `ms` with `what`. */
export function waitFor(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  return until(cond, what, ms);
}

export interface Member {
  id: number;
  url: string;
  transport: PeerTransport;
  server: http.Server;
  /** Each onMessages call's batch, in arrival order. */
  batches: Message[][];
  snapshots: Message[];
  unreachable: number[];
  snapshotStatus: { id: number; failed: boolean }[];
  /** How often a peer told this member it was removed from the cluster. */
  removed: number;
  lines: LogLine[];
  /** While set, incoming requests wait for it before reaching the handler. */
  gate: Promise<void> | undefined;
  received(): Message[];
  close(): Promise<void>;
}

export interface MemberOptions {
  id: number;
  clusterId?: number;
  port?: number;
  limits?: Partial<TransportLimits>;
  localUrls?: boolean;
  withSnapshotHandler?: boolean;
}

export async function startMember(o: MemberOptions): Promise<Member> {
  const { logger, lines } = recordingLogger();
  const mem = {} as Member;
  const opts: PeerTransportOptions = {
    memberId: o.id,
    clusterId: o.clusterId ?? 0xc1,
    logger,
    onMessages: (msgs) => void mem.batches.push(msgs),
    onUnreachable: (id) => void mem.unreachable.push(id),
    onSnapshotStatus: (id, failed) => void mem.snapshotStatus.push({ id, failed }),
    onRemoved: () => void (mem.removed += 1),
  };
  if (o.limits !== undefined) opts.limits = o.limits;
  if (o.withSnapshotHandler === true) opts.onSnapshot = (m) => void mem.snapshots.push(m);
  let handler: http.RequestListener = (_req, res) => void res.writeHead(503).end();
  const server = http.createServer((req, res) => {
    if (mem.gate === undefined) return handler(req, res);
    void mem.gate.then(() => handler(req, res));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port ?? 0, "127.0.0.1", resolve);
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  if (o.localUrls === true) opts.localUrls = [url];
  const transport = new PeerTransport(opts);
  handler = transport.handler();
  Object.assign(mem, {
    id: o.id,
    url,
    transport,
    server,
    batches: [],
    snapshots: [],
    unreachable: [],
    snapshotStatus: [],
    removed: 0,
    lines,
    gate: undefined,
    received: () => mem.batches.flat(),
    close: async () => {
      await transport.stop();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  });
  return mem;
}

/** A gate: requests wait until open() is called. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** MsgApp number `i` from `from` to `to` (index carries the sequence number). */
export function app(from: number, to: number, i: number): Message {
  return message({ type: MessageType.MsgApp, from, to, term: 1, index: i, commit: i });
}

/** Counts the message streams (`POST /raft`) `m` receives from now on, from `from` (hex id) or anyone. */
export function countStreams(m: Member, from?: string): { n: number } {
  const count = { n: 0 };
  m.server.on("request", (req: http.IncomingMessage) => {
    if (req.url === "/raft" && (from === undefined || req.headers["x-server-from"] === from)) count.n++;
  });
  return count;
}

/** Link every member to every other. */
export function mesh(members: readonly Member[]): void {
  for (const a of members) for (const b of members) if (a !== b) a.transport.addPeer(b.id, [b.url]);
}

/** startMember for one test file: every member it starts is closed when the file's tests end. */
export function memberFactory(): (o: MemberOptions) => Promise<Member> {
  const open: Member[] = [];
  after(async () => {
    await Promise.all(open.map((m) => m.close()));
  });
  return async (o) => {
    const m = await startMember(o);
    open.push(m);
    return m;
  };
}
