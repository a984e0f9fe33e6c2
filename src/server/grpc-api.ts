// etcd's gRPC API on a member's client port, loaded apart from the HTTP client API
// (client-api.ts): its modules, @bufbuild/protobuf building etcd's message descriptors, are
// most of the client side's start-up CPU, and index.ts loads them only once the client
// listener serves, so a restarted member answers HTTP clients without waiting for them.
import { GrpcServer, type GrpcServerOptions } from "./grpc/server.ts";
import { createRpcTable, grpcRecvLimit } from "./grpc/services.ts";
import type { V3GatewayContext } from "./http/v3-backend.ts";

/** The gRPC server of a member's v3 gateway backend. */
export function createGrpcServer(gateway: V3GatewayContext, opts: Omit<GrpcServerOptions, "maxRecvBytes">): GrpcServer {
  return new GrpcServer(createRpcTable(gateway), { maxRecvBytes: grpcRecvLimit(gateway), ...opts });
}
