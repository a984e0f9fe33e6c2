// POST /v3/watch: etcd's serverWatchStream behind grpc-gateway. The body is a sequence of
// WatchRequests (create / cancel / progress); the response is a never-ending sequence of
// `{"result":WatchResponse}` lines that only the client (or shutdown, or a slow reader)
// ends. The watchers, their IDs and every rule of the stream are the WatchSession's
// (v3-watch-session.ts, shared with gRPC); this file is the JSON wire: request lines in,
// response lines out, and the response buffer the session watches for slow readers.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { V3Event } from "../../store/v3/index.ts";
import type { V3CallContext, V3GatewayContext } from "./v3-backend.ts";
import { decodeWatchRequest } from "./v3-decode.ts";
import { encodeWatchResponse, streamLine } from "./v3-encode.ts";
import { grpcRecvLimit } from "./v3-handlers.ts";
import { V3StreamWriter } from "./v3-respond.ts";
import { drainedOrClosed, firstMessageError, readMessages, trackStream } from "./v3-streams.ts";
import { WatchSession, type WatchControl, type WatchWire } from "./v3-watch-session.ts";
import { messageFields } from "./v3-wire.ts";

/** The gateway's encoding of watch responses: one JSON line each. */
class JsonWatchWire implements WatchWire {
  readonly #writer: V3StreamWriter;
  readonly #gw: V3GatewayContext;

  constructor(writer: V3StreamWriter, gw: V3GatewayContext) {
    this.#writer = writer;
    this.#gw = gw;
  }

  get unsent(): number {
    return this.#writer.res.writableLength;
  }

  drained(): Promise<void> {
    return drainedOrClosed(this.#writer.res);
  }

  control(r: WatchControl): void {
    this.#writer.line(streamLine(encodeWatchResponse(r)));
  }

  events(revision: number, watchId: number, events: readonly V3Event[], fragment: boolean): void {
    const header = this.#gw.backend.header(revision);
    this.#writer.line(streamLine(encodeWatchResponse({ header, watchId, events, fragment })));
  }

  overflow(): void {
    this.#writer.res.destroy(); // 'close' closes the session too
  }

  fail(err: unknown): void {
    this.#writer.res.destroy(err instanceof Error ? err : new Error(String(err)));
  }
}

/** Serves POST /v3/watch. */
export function serveWatch(req: IncomingMessage, res: ServerResponse, gw: V3GatewayContext, ctx: V3CallContext): WatchSession {
  const writer = new V3StreamWriter(res);
  const stream = new WatchSession(gw, ctx, new JsonWatchWire(writer, gw));
  res.on("close", () => stream.close());
  trackStream(res, gw);
  readMessages(req, grpcRecvLimit(gw), {
    message(node) {
      stream.enqueue(decodeWatchRequest(messageFields(node)));
    },
    error(message, index) {
      // Only a broken FIRST message fails the call; later ones just stop the reading.
      if (index === 0) {
        stream.close();
        writer.fail(firstMessageError(message));
      }
    },
    end() {
      // The client closed its sending side: etcd keeps the watchers and the response open.
    },
  });
  return stream;
}
