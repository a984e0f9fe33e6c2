// The request side of the gateway's streams, and the two simple streams. grpc-gateway
// decodes a bidirectional stream's body one JSON value after another as bytes arrive; a
// value that does not decode ends the reading: as the FIRST message it fails the call
// (500, code 2: the decoder's error is passed on unwrapped), later it is dropped silently
// and the gateway closes its sending side, as if the body had ended.
import type { IncomingMessage, ServerResponse } from "node:http";
import { createHash } from "node:crypto";
import { GrpcCode } from "../../api/v3-errors.ts";
import type { V3CallContext, V3GatewayContext, V3Snapshot } from "./v3-backend.ts";
import { decodeLeaseId } from "./v3-decode.ts";
import { encodeKeepAlive, encodeSnapshotChunk, streamLine } from "./v3-encode.ts";
import { grpcRecvLimit } from "./v3-handlers.ts";
import { JsonMessageReader, type JsonNode } from "./v3-json.ts";
import { V3StreamWriter } from "./v3-respond.ts";
import { GatewayError, messageFields } from "./v3-wire.ts";

export interface MessageHandlers {
  /** A decoded value; `index` counts from 0. Throwing stops the reading like a decode error. */
  message(node: JsonNode, index: number): void;
  /** The reading stopped on a bad value (`index`: how many were read before it). */
  error(message: string, index: number): void;
  /** The body ended after good values only. */
  end(): void;
}

/** Reads the request body as a stream of JSON messages (the body is drained to its end in every case). */
export function readMessages(req: IncomingMessage, limit: number, h: MessageHandlers): void {
  const reader = new JsonMessageReader(limit);
  let count = 0;
  let stopped = false;
  const take = (r: { nodes: JsonNode[]; error?: string }): void => {
    for (const node of r.nodes) {
      if (stopped) return;
      try {
        h.message(node, count);
        count++;
      } catch (err) {
        stopped = true;
        h.error(err instanceof Error ? err.message : String(err), count);
        return;
      }
    }
    if (r.error !== undefined && !stopped) {
      stopped = true;
      h.error(r.error, count);
    }
  };
  req.on("data", (chunk: Buffer) => {
    if (!stopped) take(reader.push(chunk));
  });
  req.on("end", () => {
    if (!stopped) take(reader.end());
    if (!stopped) {
      stopped = true;
      h.end();
    }
  });
}

/** grpc-gateway's answer to a stream whose first message does not decode. */
export function firstMessageError(message: string): GatewayError {
  return new GatewayError(GrpcCode.Unknown, message);
}

/** Resolves once `res` has room again (at once if it has), or is closed. */
export function drainedOrClosed(res: ServerResponse): Promise<void> {
  if (!res.writableNeedDrain || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/** Adds a stream to the shutdown set while it is open. */
export function trackStream(res: ServerResponse, gw: V3GatewayContext): void {
  const set = gw.streams;
  if (set === undefined) return;
  set.add(res);
  res.on("close", () => set.delete(res));
}

/**
 * POST /v3/lease/keepalive: one `{"result":{header, ID, TTL}}` line per request message, in
 * order (the header is taken before the renewal, as etcd does). The response ends once the
 * body has ended and every message is answered; a backend error ends it with the error.
 */
export function serveKeepAlive(req: IncomingMessage, res: ServerResponse, gw: V3GatewayContext, ctx: V3CallContext): void {
  const writer = new V3StreamWriter(res);
  trackStream(res, gw);
  let queue: Promise<void> = Promise.resolve();
  let failed = false;
  const enqueue = (job: () => Promise<void>): void => {
    queue = queue.then(async () => {
      // Ended (its deadline passed): no more renewals, as etcd's stream is gone then.
      if (failed || res.destroyed || res.writableEnded) return;
      try {
        await job();
      } catch (err) {
        failed = true;
        writer.fail(err);
      }
    });
  };
  readMessages(req, grpcRecvLimit(gw), {
    message(node) {
      const id = decodeLeaseId(messageFields(node));
      enqueue(async () => {
        const h = gw.backend.header();
        const ttl = await gw.backend.leaseKeepAlive(id, ctx);
        writer.line(streamLine(encodeKeepAlive(h, id, ttl)));
      });
    },
    error(message, index) {
      if (index === 0) {
        failed = true;
        writer.fail(firstMessageError(message));
        return;
      }
      enqueue(async () => writer.end());
    },
    end() {
      enqueue(async () => writer.end());
    },
  });
}

/** etcd's snapshot send buffer: blobs of 32 KiB. */
export const SNAPSHOT_CHUNK_BYTES = 32 * 1024;

/**
 * etcd's snapshot stream, for the gateway and gRPC alike: the snapshot in 32 KiB blobs
 * with the bytes remaining after each, then its sha256 as a last blob (etcdctl checks it).
 */
export async function* snapshotBlobs(snap: V3Snapshot): AsyncGenerator<{ remaining: number; blob: Uint8Array }> {
  const sha = createHash("sha256");
  let sent = 0;
  let carry: Buffer = Buffer.alloc(0);
  for await (const chunk of snap.chunks()) {
    carry = carry.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([carry, chunk]);
    while (carry.length >= SNAPSHOT_CHUNK_BYTES) {
      const blob = carry.subarray(0, SNAPSHOT_CHUNK_BYTES);
      carry = carry.subarray(SNAPSHOT_CHUNK_BYTES);
      sent += blob.length;
      sha.update(blob);
      yield { remaining: snap.size - sent, blob };
    }
  }
  if (carry.length > 0) {
    sent += carry.length;
    sha.update(carry);
    yield { remaining: snap.size - sent, blob: carry };
  }
  if (sent !== snap.size) throw new Error(`snapshot of ${snap.size} bytes ended after ${sent}`);
  yield { remaining: 0, blob: sha.digest() };
}

/** POST /v3/maintenance/snapshot: snapshotBlobs as stream lines. Writes wait for the socket. */
export async function serveSnapshot(res: ServerResponse, gw: V3GatewayContext, ctx: V3CallContext): Promise<void> {
  const writer = new V3StreamWriter(res);
  trackStream(res, gw);
  let snap: V3Snapshot;
  try {
    snap = await gw.backend.snapshot(ctx);
  } catch (err) {
    writer.fail(err);
    return;
  }
  try {
    for await (const { remaining, blob } of snapshotBlobs(snap)) {
      if (!writer.line(streamLine(encodeSnapshotChunk(remaining, blob)))) return;
      await drainedOrClosed(res);
    }
    writer.end();
  } catch (err) {
    writer.fail(err);
  } finally {
    snap.release();
  }
}
