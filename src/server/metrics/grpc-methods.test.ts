import { test } from "node:test";
import assert from "node:assert/strict";
import { Auth, Cluster, KV, Lease, Maintenance, Watch } from "../grpc/gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { Health } from "../grpc/gen/grpc/health/v1/health_pb.ts";
import { GRPC_METHODS } from "./grpc-methods.ts";

const KIND_TYPE = { unary: "unary", server_streaming: "server_stream", client_streaming: "client_stream", bidi_streaming: "bidi_stream" } as const;

test("the written-out method list is the served services' descriptors, in their order", () => {
  const fromDescriptors = [KV, Watch, Lease, Cluster, Maintenance, Auth, Health].flatMap((s) =>
    s.methods.map((m) => ({ service: s.typeName, method: m.name, type: KIND_TYPE[m.methodKind] })),
  );
  assert.equal(fromDescriptors.length, 41);
  assert.deepEqual(GRPC_METHODS, fromDescriptors);
});
