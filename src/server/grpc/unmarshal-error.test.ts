// gogoproto's (etcd 3.4.23's) words for malformed requests: each case below was sent to
// etcd 3.4.23 over gRPC and its grpc-message is the expected text after "grpc: error
// unmarshalling request: " (code 13; a stream's message: "grpc: failed to unmarshal the
// received message "); the last test sends some through kvctl's server.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import http2 from "node:http2";
import type { DescMessage } from "@bufbuild/protobuf";
import { FakeV3Backend } from "../http/v3-fake-backend.test-helper.ts";
import { frameMessage } from "./frames.ts";
import * as rpc from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { grpcHeaders, startGrpcTestServer, type GrpcTestServer } from "./grpc-test-server.test-helper.ts";
import { decodeRequest } from "./services.ts";
import { goName, gogoAccepts, gogoUnmarshalError } from "./unmarshal-error.ts";

const EOF = "unexpected EOF";
/** [request message, bytes (hex), etcd's text; undefined: etcd decodes it]. */
const CASES: Array<[DescMessage, string, string | undefined]> = [
  [rpc.RangeRequestSchema, "0a", EOF],
  [rpc.RangeRequestSchema, "0a05616263", EOF],
  [rpc.RangeRequestSchema, "00", "proto: RangeRequest: illegal tag 0 (wire type 0)"],
  [rpc.RangeRequestSchema, "02", "proto: RangeRequest: illegal tag 0 (wire type 2)"],
  [rpc.RangeRequestSchema, "0c", "proto: RangeRequest: wiretype end group for non-group"],
  [rpc.RangeRequestSchema, "0e", "proto: wrong wireType = 6 for field Key"],
  [rpc.RangeRequestSchema, "7e", "proto: illegal wireType 6"],
  [rpc.RangeRequestSchema, "0801", "proto: wrong wireType = 0 for field Key"],
  [rpc.RangeRequestSchema, "1a0161", "proto: wrong wireType = 2 for field Limit"],
  [rpc.RangeRequestSchema, "18", EOF],
  [rpc.RangeRequestSchema, "18ffffffffffffffffffff01", "proto: integer overflow"],
  [rpc.RangeRequestSchema, "18ffffffffffffffffff01", undefined],
  [rpc.RangeRequestSchema, "0affffffffffffffffff01", "proto: negative length found during unmarshaling"],
  [rpc.RangeRequestSchema, "0affffffffffffffff7f", EOF],
  [rpc.RangeRequestSchema, "ffffffffffffffffffff01", "proto: integer overflow"],
  [rpc.RangeRequestSchema, "79", EOF],
  [rpc.RangeRequestSchema, "7b", EOF],
  [rpc.RangeRequestSchema, "7b7c", undefined],
  [rpc.RangeRequestSchema, "80808080800f", "proto: RangeRequest: illegal tag 0 (wire type 515396075520)"],
  [rpc.PutRequestSchema, "0a016112", EOF],
  [rpc.PutRequestSchema, "0a01611a01", "proto: wrong wireType = 2 for field Lease"],
  [rpc.TxnRequestSchema, "0a0100", "proto: Compare: illegal tag 0 (wire type 0)"],
  [rpc.TxnRequestSchema, "120412020000", "proto: PutRequest: illegal tag 0 (wire type 0)"],
  [rpc.LeaseGrantRequestSchema, "0a", "proto: wrong wireType = 2 for field TTL"],
  [rpc.AuthRoleGrantPermissionRequestSchema, "0a017212020000", "proto: Permission: illegal tag 0 (wire type 0)"],
  [rpc.WatchRequestSchema, "0a0100", "proto: WatchCreateRequest: illegal tag 0 (wire type 0)"],
  [rpc.WatchRequestSchema, "0a022a", EOF],
  // A scalar in another wire type, on messages @bufbuild would read anyway (recorded from
  // etcd 3.4.23 with test/integration/grpc-decode.test.ts).
  [rpc.LeaseGrantRequestSchema, "0a0105", "proto: wrong wireType = 2 for field TTL"],
  [rpc.LeaseTimeToLiveRequestSchema, "08011200", "proto: wrong wireType = 2 for field Keys"],
  [rpc.DeleteRangeRequestSchema, "0a017a1a0101", "proto: wrong wireType = 2 for field PrevKv"],
  [rpc.TxnRequestSchema, "0a030a0100", "proto: wrong wireType = 2 for field Result"],
  [rpc.TxnRequestSchema, "120712050a01612200", "proto: wrong wireType = 2 for field PrevKv"],
  [rpc.WatchRequestSchema, "12020a00", "proto: wrong wireType = 2 for field WatchId"],
  [rpc.MemberUpdateRequestSchema, "08011000", "proto: wrong wireType = 0 for field PeerURLs"],
  [rpc.AuthUserAddRequestSchema, "0801", "proto: wrong wireType = 0 for field Name"],
  [rpc.AuthUserAddRequestSchema, "0a02ff611201fe", undefined],
  [rpc.AuthUserListRequestSchema, "f80101", undefined],
  [rpc.MemberAddRequestSchema, "0a0161", undefined],
  [rpc.LeaseGrantRequestSchema, "08ffffffffffffffffff01", undefined],
];

test("gogoproto's first error for each malformed message, or none", () => {
  for (const [desc, hex, want] of CASES) assert.equal(gogoUnmarshalError(desc, Buffer.from(hex, "hex")), want, `${desc.name} ${hex}`);
});

test("the quick walk says yes only where gogoproto decodes, and to ordinary requests", () => {
  for (const [desc, hex, want] of CASES) {
    if (gogoAccepts(desc, Buffer.from(hex, "hex"))) assert.equal(want, undefined, `${desc.name} ${hex}`);
  }
  const ordinary: Array<[DescMessage, string]> = [
    [rpc.TxnRequestSchema, "0a0b080010021a01612088aa0d120a0a080a0161120162200112050a030a0161"],
    [rpc.LeaseGrantRequestSchema, "083c"],
    [rpc.WatchRequestSchema, "0a0c0a016112010018052a02000130011a00"],
    [rpc.MemberAddRequestSchema, "0a16687474703a2f2f3132372e302e302e313a32353338301001"],
    [rpc.AuthRoleGrantPermissionRequestSchema, "0a0172120808021201611a0162"],
    [rpc.LeaseGrantRequestSchema, "f80101"],
  ];
  for (const [desc, hex] of ordinary) assert.equal(gogoAccepts(desc, Buffer.from(hex, "hex")), true, `${desc.name} ${hex}`);
});

test("decodeRequest refuses a scalar in another wire type that @bufbuild would read", () => {
  assert.throws(() => decodeRequest(rpc.LeaseGrantRequestSchema, Buffer.from("0a0105", "hex")), (e: Error) => e.message === "grpc: error unmarshalling request: proto: wrong wireType = 2 for field TTL");
  assert.equal(decodeRequest(rpc.LeaseGrantRequestSchema, Buffer.from("083c", "hex")).TTL, 60n);
});

test("Go names as protoc-gen-gogo's CamelCase makes them", () => {
  assert.deepEqual(["range_end", "ID", "peerURLs", "remaining_TTL", "prev_kv", "_x", "a1b"].map(goName), ["RangeEnd", "ID", "PeerURLs", "Remaining_TTL", "PrevKv", "XX", "A1B"]);
});

let server: GrpcTestServer<FakeV3Backend>;
before(async () => {
  server = await startGrpcTestServer(new FakeV3Backend());
});
after(() => server.close());

test("a malformed request is answered code 13 in etcd's words, on the fast readers' path and on a stream too", async () => {
  const client = server.connect();
  const call = (path: string, hex: string, end = true): Promise<[string, string]> =>
    new Promise((resolve, reject) => {
      const req = client.request(grpcHeaders(path));
      let status: [string, string] = ["", ""];
      const take = (h: http2.IncomingHttpHeaders): void => {
        if (h["grpc-status"] !== undefined) status = [String(h["grpc-status"]), decodeURIComponent(String(h["grpc-message"] ?? ""))];
      };
      req.on("response", take);
      req.on("trailers", take);
      req.on("data", () => undefined);
      req.on("error", reject);
      req.on("close", () => resolve(status));
      if (end) req.end(frameMessage(Buffer.from(hex, "hex")));
      else req.write(frameMessage(Buffer.from(hex, "hex")));
    });
  assert.deepEqual(await call("/etcdserverpb.KV/Range", "0a05616263"), ["13", "grpc: error unmarshalling request: unexpected EOF"]);
  assert.deepEqual(await call("/etcdserverpb.KV/Put", "00"), ["13", "grpc: error unmarshalling request: proto: PutRequest: illegal tag 0 (wire type 0)"]);
  assert.deepEqual(await call("/etcdserverpb.KV/Txn", "0a0100"), ["13", "grpc: error unmarshalling request: proto: Compare: illegal tag 0 (wire type 0)"]);
  assert.deepEqual(await call("/etcdserverpb.Lease/LeaseRevoke", "08ffffffffffffffffffff01"), ["13", "grpc: error unmarshalling request: proto: integer overflow"]);
  // A stream's message: grpc-go's recv words it otherwise (no colon).
  assert.deepEqual(await call("/etcdserverpb.Watch/Watch", "0a0100", false), ["13", "grpc: failed to unmarshal the received message proto: WatchCreateRequest: illegal tag 0 (wire type 0)"]);
  client.close();
});
