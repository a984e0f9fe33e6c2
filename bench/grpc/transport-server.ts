// The gRPC transport alone: a GrpcServer (src/server/grpc/server.ts of the tree given)
// whose one RPC, KV/Put, answers a fixed PutResponse a microtask later, nothing behind
// it. What h2load then costs this process per call is the HTTP/2 connection, HPACK, the
// gRPC mapping and the sockets. Run by transport.sh (node --import tsx, from that tree).
//   node --import tsx bench/grpc/transport-server.ts <tree> <port>
import { createServer, type AddressInfo } from "node:net";

const root = process.argv[2] ?? ".";
const port = Number(process.argv[3] ?? 0);
const { GrpcServer } = (await import(`${root}/src/server/grpc/server.ts`)) as typeof import("../../src/server/grpc/server.ts");
// A framed PutResponse (gRPC's 5-byte prefix, then field 1: a ResponseHeader of six small
// varints), about the size of a member's answer.
const answer = Buffer.from([0, 0, 0, 0, 14, 0x0a, 12, 0x08, 1, 0x10, 2, 0x18, 3, 0x20, 4, 0x28, 5, 0x30, 6]);
const rpcs = new Map([["/etcdserverpb.KV/Put", { kind: "unary" as const, framed: true, run: () => Promise.resolve(answer) }]]);
const grpc = new GrpcServer(rpcs, { maxRecvBytes: 2 << 20, clientCertAuth: false, onRequest: () => undefined });
const tcp = createServer({ noDelay: true }, (s) => grpc.accept(s));
tcp.listen(port, "127.0.0.1", () => console.log("listening", (tcp.address() as AddressInfo).port));
// A profile (--cpu-prof) is written only at a normal exit.
process.on("SIGINT", () => process.exit(0));
process.on("SIGTERM", () => process.exit(0));
