// The methods of the services the client port serves, as go-grpc-prometheus labels them
// (grpc_service, grpc_method, grpc_type). Written out rather than walked from rpc.proto's
// descriptors so that a member builds its metrics without loading @bufbuild/protobuf and
// the generated code (45-60 ms of a restart's CPU before the member served its peers);
// grpc-methods.test.ts holds this list equal to the descriptors.

export type GrpcType = "unary" | "server_stream" | "client_stream" | "bidi_stream";

export interface GrpcMethod {
  readonly service: string;
  readonly method: string;
  readonly type: GrpcType;
}

/** Per service, in the order the metrics list them: each method with its type ("" for unary). */
const SERVICES: ReadonlyArray<readonly [string, string]> = [
  ["etcdserverpb.KV", "Range Put DeleteRange Txn Compact"],
  ["etcdserverpb.Watch", "Watch:bidi_stream"],
  ["etcdserverpb.Lease", "LeaseGrant LeaseRevoke LeaseKeepAlive:bidi_stream LeaseTimeToLive LeaseLeases"],
  ["etcdserverpb.Cluster", "MemberAdd MemberRemove MemberUpdate MemberList MemberPromote"],
  ["etcdserverpb.Maintenance", "Alarm Status Defragment Hash HashKV Snapshot:server_stream MoveLeader"],
  [
    "etcdserverpb.Auth",
    "AuthEnable AuthDisable Authenticate UserAdd UserGet UserList UserDelete UserChangePassword UserGrantRole UserRevokeRole RoleAdd RoleGet RoleList RoleDelete RoleGrantPermission RoleRevokePermission",
  ],
  ["grpc.health.v1.Health", "Check Watch:server_stream"],
];

export const GRPC_METHODS: readonly GrpcMethod[] = SERVICES.flatMap(([service, methods]) =>
  methods.split(" ").map((m): GrpcMethod => {
    const [method = "", type = "unary"] = m.split(":");
    return { service, method, type: type as GrpcType };
  }),
);
