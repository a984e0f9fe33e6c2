// One unary gRPC call over node:http2, for the few v3 calls the JSON gateway does not
// route: etcd 3.4's gateway has no Maintenance.HashKV (its pattern is shadowed by
// maintenance/hash), so etcdctl's `endpoint hashkv` reaches it only over gRPC, and kvctl
// serves gRPC on the same client port. Messages are hand-written (proto-wire.ts).
//
// Invariants:
// - a call goes to the one endpoint named: `endpoint hashkv` describes each endpoint;
// - the auth token travels as clientv3 sends it, in the `token` metadata;
// - a non-OK status becomes a V3Error with grpc-go's code and the decoded grpc-message.

import { isIP } from "node:net";
import { V3Error, GrpcCode } from "../api/v3-errors.ts";
import { parseEndpoint } from "./cluster.ts";
import { DeadlineExceededError } from "./errors.ts";
import { bytesField, int64Field, readFields, uint64Field, ProtoWriter } from "./proto-wire.ts";
import { readTlsFiles, toNetworkError, usesTls, type TlsFiles } from "./transport.ts";
import type { WireHeader } from "./v3-types.ts";

export interface GrpcCallOptions {
  tls?: TlsFiles;
  /** clientv3's auth token (sent as the `token` metadata). */
  token?: string;
  signal?: AbortSignal;
  /** Time to connect; 0 = none. */
  connectTimeoutMs?: number;
}

/** grpc-message is percent-encoded (grpc's spec): decode it as grpc-go does. */
function grpcMessage(raw: string | string[] | undefined): string {
  const s = Array.isArray(raw) ? raw.join(",") : raw ?? "";
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Sends `message` to `method` (`/etcdserverpb.Maintenance/HashKV`) on `endpoint`; returns the answer's bytes. */
export async function grpcUnary(endpoint: string, method: string, message: Uint8Array, opts: GrpcCallOptions = {}): Promise<Buffer> {
  const http2 = await import("node:http2");
  const ep = parseEndpoint(endpoint);
  const url = new URL(ep.origin);
  const tls = opts.tls ?? {};
  const secure = usesTls(ep.origin, tls);
  const authority = `${secure ? "https" : "http"}://${url.host}`;
  return new Promise<Buffer>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    // SNI carries host names only (RFC 6066): an IP address is checked against the certificate's IP SANs.
    const host = url.hostname.replace(/^\[|\]$/g, "");
    // A server name of the flags (the --discovery-srv domain) wins over the host's.
    const session = http2.connect(authority, secure ? { ...(isIP(host) === 0 ? { servername: host } : {}), ...readTlsFiles(tls) } : {});
    const finish = (err: Error | undefined, body?: Buffer): void => {
      if (settled) return;
      settled = true;
      if (timer !== undefined) clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      session.close();
      session.destroy();
      if (err !== undefined) reject(err);
      else resolve(body ?? Buffer.alloc(0));
    };
    const onAbort = (): void => finish(new DeadlineExceededError());
    if (opts.signal?.aborted === true) return onAbort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    if (opts.connectTimeoutMs !== undefined && opts.connectTimeoutMs > 0) {
      timer = setTimeout(() => finish(new DeadlineExceededError()), opts.connectTimeoutMs);
      session.once("connect", () => {
        if (timer !== undefined) clearTimeout(timer);
      });
    }
    session.on("error", (err: NodeJS.ErrnoException) => finish(toNetworkError(err, new URL(authority))));
    const headers: Record<string, string> = {
      ":method": "POST",
      ":path": method,
      "content-type": "application/grpc",
      te: "trailers",
    };
    if (opts.token !== undefined && opts.token !== "") headers["token"] = opts.token;
    const stream = session.request(headers);
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    frame.set(message, 5);
    stream.end(frame);
    const chunks: Buffer[] = [];
    let status: string | undefined;
    let statusMessage: string | string[] | undefined;
    let httpStatus = 0;
    stream.on("response", (h) => {
      httpStatus = Number(h[":status"] ?? 0);
      // A trailers-only answer carries the status in its headers.
      if (h["grpc-status"] !== undefined) {
        status = String(h["grpc-status"]);
        statusMessage = h["grpc-message"];
      }
    });
    stream.on("trailers", (h) => {
      if (h["grpc-status"] !== undefined) {
        status = String(h["grpc-status"]);
        statusMessage = h["grpc-message"];
      }
    });
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", (err: NodeJS.ErrnoException) => finish(toNetworkError(err, new URL(authority))));
    stream.on("close", () => {
      if (status === undefined) {
        return finish(new V3Error(GrpcCode.Unknown, httpStatus === 200 ? "stream terminated by RST_STREAM" : `unexpected HTTP status code received from server: ${httpStatus}`));
      }
      if (status !== "0") return finish(new V3Error(Number(status), grpcMessage(statusMessage)));
      const body = Buffer.concat(chunks);
      if (body.length < 5) return finish(new V3Error(GrpcCode.Internal, "grpc: no response message"));
      const len = body.readUInt32BE(1);
      finish(undefined, body.subarray(5, 5 + len));
    });
  });
}

/** HashKVResponse as the gateway would render it (decimal strings). */
export interface WireHashKVResponse {
  header?: WireHeader;
  hash?: string;
  compact_revision?: string;
}

function decodeHeader(b: Buffer): WireHeader {
  const f = readFields(b);
  return {
    cluster_id: uint64Field(f, 1).toString(),
    member_id: uint64Field(f, 2).toString(),
    revision: int64Field(f, 3).toString(),
    raft_term: uint64Field(f, 4).toString(),
  };
}

/** Maintenance.HashKV at `revision` (0: the latest) on one endpoint. */
export async function hashKV(endpoint: string, revision: number, opts: GrpcCallOptions = {}): Promise<WireHashKVResponse> {
  const req = new ProtoWriter().int(1, revision).finish();
  const f = readFields(await grpcUnary(endpoint, "/etcdserverpb.Maintenance/HashKV", req, opts));
  const header = bytesField(f, 1);
  return {
    ...(header !== undefined ? { header: decodeHeader(header) } : {}),
    hash: uint64Field(f, 2).toString(),
    compact_revision: int64Field(f, 3).toString(),
  };
}
