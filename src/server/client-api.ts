// The client API's modules: v2 keys and the v3 JSON gateway on node:http with their fast
// lanes, gRPC on the same port, the metrics listener's router. The server assembly
// (index.ts) loads them in one step once the peer listener serves, so a restarting member
// answers its peers (heartbeats, votes) before it compiles and sets up the client side.
export { createRouter } from "./http/router.ts";
export { keysFastGet } from "./http/keys-fast-get.ts";
export { keysFast, keysFastWrite } from "./http/keys-fast-write.ts";
export { v3FastKv } from "./http/v3-fast-kv.ts";
export { firstOf } from "./http/fast-lane.ts";
export { V3Service } from "./v3-service.ts";
export { GrpcServer } from "./grpc/server.ts";
export { LeaderMonitor } from "./grpc/require-leader.ts";
export { createRpcTable, grpcRecvLimit } from "./grpc/services.ts";
export { createMetricsRouter } from "./metrics/http.ts";
