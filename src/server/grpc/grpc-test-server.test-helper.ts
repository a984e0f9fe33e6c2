// A GrpcServer in process on 127.0.0.1 (port 0) over the gateway tests' fake backend, as
// the gRPC unit tests build it (grpc.test.ts, wire.test.ts, flags.test.ts), and the call
// headers and Range message they all send. close() also ends every client connect() made.
import http2 from "node:http2";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import type { V3GatewayContext } from "../http/v3-backend.ts";
import type { FakeV3Backend } from "../http/v3-fake-backend.test-helper.ts";
import { frameMessage } from "./frames.ts";
import { RangeRequestSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { GrpcServer, type GrpcServerOptions } from "./server.ts";
import { createRpcTable, grpcRecvLimit } from "./services.ts";

export interface GrpcTestServer<B extends FakeV3Backend> {
  backend: B;
  /** The server itself (drain, close). */
  grpc: GrpcServer;
  port: number;
  url: string;
  /** An HTTP/2 client session to the server, closed by close() if the test has not. */
  connect(options?: http2.ClientSessionOptions): http2.ClientHttp2Session;
  close(): void;
}

export interface GrpcTestServerOptions {
  /** The server's options besides the receive limit and client-cert auth (observer, keepalive, streams). */
  server?: Partial<GrpcServerOptions>;
  streamBufferBytes?: number;
  /** What the TCP listener does with a connection, given the hand-over to gRPC (e.g. the cmux). */
  connections?: (toGrpc: (s: Socket) => void) => (s: Socket) => void;
}

export async function startGrpcTestServer<B extends FakeV3Backend>(backend: B, opts: GrpcTestServerOptions = {}): Promise<GrpcTestServer<B>> {
  const gw: V3GatewayContext = { backend, maxRequestBytes: 1.5 * 1024 * 1024, maxTxnOps: 128 };
  if (opts.streamBufferBytes !== undefined) gw.streamBufferBytes = opts.streamBufferBytes;
  const grpc = new GrpcServer(createRpcTable(gw), { maxRecvBytes: grpcRecvLimit(gw), clientCertAuth: false, ...opts.server });
  const toGrpc = (s: Socket): void => grpc.accept(s);
  const tcp = createServer(opts.connections?.(toGrpc) ?? toGrpc);
  await new Promise<void>((r) => tcp.listen(0, "127.0.0.1", r));
  const port = (tcp.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const clients = new Set<http2.ClientHttp2Session>();
  return {
    backend,
    grpc,
    port,
    url,
    connect: (options) => {
      const c = http2.connect(url, options);
      clients.add(c);
      c.once("close", () => clients.delete(c));
      return c;
    },
    close: () => {
      for (const c of clients) c.destroy();
      grpc.close();
      tcp.close();
    },
  };
}

/** The request headers of a gRPC call to `path` ("/etcdserverpb.KV/Range"). */
export function grpcHeaders(path: string, extra: http2.OutgoingHttpHeaders = {}): http2.OutgoingHttpHeaders {
  return { ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...extra };
}

/** A framed RangeRequest for `key`. */
export function rangeFrame(key: string): Buffer {
  return frameMessage(toBinary(RangeRequestSchema, create(RangeRequestSchema, { key: Buffer.from(key) })));
}
