// The client API's modules: v2 keys and the v3 JSON gateway on node:http with their fast
// lanes, the metrics listener's router. The server assembly (index.ts) loads them in one
// step once the peer listener serves, so a restarting member answers its peers (heartbeats,
// votes) before it compiles and sets up the client side; gRPC, on the same port, loads
// once the client listener serves (grpc-api.ts).
export { createRouter } from "./http/router.ts";
export { keysFastGet } from "./http/keys-fast-get.ts";
export { keysFast, keysFastWrite } from "./http/keys-fast-write.ts";
export { v3FastKv } from "./http/v3-fast-kv.ts";
export { firstOf } from "./http/fast-lane.ts";
export { V3Service } from "./v3-service.ts";
export { LeaderMonitor } from "./grpc/require-leader.ts";
export { createMetricsRouter } from "./metrics/http.ts";
