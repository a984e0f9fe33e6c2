// Request bytes read as etcd 3.4's generated (gogoproto) decoder reads them, sent raw to a
// real `kvctl serve`: a scalar in another wire type than its field's is refused with
// gogoproto's words on every service (the nested messages of a Txn, a Watch and
// LeaseKeepAlive stream's messages too); a `string` that is not UTF-8 is taken and its
// bytes answered back unchanged (user and role names); unknown enum numbers in a Compare
// and a Range's sort order evaluated as etcd's Go code does, unknown alarm and permission
// types stored and listed as etcd stores them. Every expected answer below
// was recorded from etcd 3.4.23 (the same bytes, the same order, a fresh member); the
// response header (cluster and member IDs, revision, term) is left out of the comparison.
// GRPC_DECODE_AGAINST=etcd runs the cases against etcd itself.
import assert from "node:assert/strict";
import http2 from "node:http2";
import { after, before, test } from "node:test";
import { installed, startGrpcServer, waitGrpcReady, type GrpcTestServer } from "../helpers/grpc.ts";

const kind = process.env["GRPC_DECODE_AGAINST"] === "etcd" ? "etcd" : "kvctl";
let server: GrpcTestServer | undefined;

before(async () => {
  if (!installed("etcdctl")) return;
  server = await startGrpcServer(kind);
  await waitGrpcReady(server);
});
after(async () => {
  await server?.stop();
});

/** One call with one message (the stream half-closed after it): "code message | body", the body's header field dropped. */
function call(path: string, hex: string): Promise<string> {
  const session = http2.connect(server!.url);
  const msg = Buffer.from(hex, "hex");
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(msg.length, 1);
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers" });
    let status = "(no status)";
    const chunks: Buffer[] = [];
    const take = (h: http2.IncomingHttpHeaders): void => {
      if (h["grpc-status"] !== undefined) status = `${String(h["grpc-status"])} ${decodeURIComponent(String(h["grpc-message"] ?? ""))}`.trimEnd();
    };
    req.on("response", take);
    req.on("trailers", take);
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("error", reject);
    // A stream whose message was taken stays open: shown as such rather than hanging the test.
    const timer = setTimeout(() => req.close(), 5000);
    req.on("close", () => {
      clearTimeout(timer);
      session.close();
      const all = Buffer.concat(chunks);
      const bodies: string[] = [];
      for (let at = 0; at + 5 <= all.length; ) {
        const len = all.readUInt32BE(at + 1);
        bodies.push(withoutHeader(all.subarray(at + 5, at + 5 + len)).toString("hex"));
        at += 5 + len;
      }
      const shown = bodies.filter((x) => x !== "");
      resolve(shown.length === 0 ? status : `${status} | ${shown.join(" ")}`);
    });
    req.end(Buffer.concat([prefix, msg]));
  });
}

/** A response without its field 1 (ResponseHeader) when it comes first, as it does from both. */
function withoutHeader(b: Buffer): Buffer {
  if (b[0] !== 0x0a) return b;
  let len = 0;
  let at = 1;
  for (let shift = 0; ; shift += 7) {
    const x = b[at++]!;
    len += (x & 0x7f) * 2 ** shift;
    if (x < 0x80) break;
  }
  return b.subarray(at + len);
}

const WRONG = "13 grpc: error unmarshalling request: proto: wrong wireType";
const STREAM_WRONG = "13 grpc: failed to unmarshal the received message proto: wrong wireType";

/** [path, request (hex), etcd 3.4.23's answer], in order (later ones see the earlier writes). */
const CASES: Array<[string, string, string]> = [
  ["/etcdserverpb.KV/Put", "0a0161120162", "0"],
  ["/etcdserverpb.KV/Put", "0a013012047a65726f", "0"],
  // A scalar in another wire type: refused on every service, nested messages included.
  ["/etcdserverpb.Lease/LeaseGrant", "0a0105", `${WRONG} = 2 for field TTL`],
  ["/etcdserverpb.Lease/LeaseRevoke", "0a0101", `${WRONG} = 2 for field ID`],
  ["/etcdserverpb.Lease/LeaseTimeToLive", "08011200", `${WRONG} = 2 for field Keys`],
  ["/etcdserverpb.Lease/LeaseKeepAlive", "0a00", `${STREAM_WRONG} = 2 for field ID`],
  ["/etcdserverpb.KV/DeleteRange", "0a017a1a0101", `${WRONG} = 2 for field PrevKv`],
  ["/etcdserverpb.KV/Compact", "0a0101", `${WRONG} = 2 for field Revision`],
  ["/etcdserverpb.KV/Txn", "0a030a0100", `${WRONG} = 2 for field Result`],
  ["/etcdserverpb.KV/Txn", "120712050a01612200", `${WRONG} = 2 for field PrevKv`],
  ["/etcdserverpb.KV/Txn", "120712050a01611a00", `${WRONG} = 2 for field Lease`],
  ["/etcdserverpb.Watch/Watch", "0a021a00", `${STREAM_WRONG} = 2 for field StartRevision`],
  ["/etcdserverpb.Watch/Watch", "12020a00", `${STREAM_WRONG} = 2 for field WatchId`],
  ["/etcdserverpb.Cluster/MemberRemove", "0a00", `${WRONG} = 2 for field ID`],
  ["/etcdserverpb.Cluster/MemberUpdate", "08011000", `${WRONG} = 0 for field PeerURLs`],
  ["/etcdserverpb.Maintenance/Alarm", "0a00", `${WRONG} = 2 for field Action`],
  ["/etcdserverpb.Maintenance/HashKV", "0a00", `${WRONG} = 2 for field Revision`],
  ["/etcdserverpb.Maintenance/MoveLeader", "0a0101", `${WRONG} = 2 for field TargetID`],
  ["/etcdserverpb.Auth/RoleGrantPermission", "0a017212020a00", `${WRONG} = 2 for field PermType`],
  ["/etcdserverpb.Auth/UserAdd", "0801", `${WRONG} = 0 for field Name`],
  // Unknown fields are skipped, as before.
  ["/etcdserverpb.Auth/UserList", "f80101", "0"],
  // Strings that are not UTF-8: stored and answered back as the same bytes.
  ["/etcdserverpb.Auth/UserAdd", "0a02ff611201fe", "0"],
  ["/etcdserverpb.Auth/RoleAdd", "0a02c0af", "0"],
  ["/etcdserverpb.Auth/UserGrantRole", "0a02ff611202c0af", "0"],
  ["/etcdserverpb.Auth/UserGet", "0a02ff61", "0 | 1202c0af"],
  ["/etcdserverpb.Auth/UserList", "", "0 | 1202ff61"],
  ["/etcdserverpb.Auth/RoleList", "", "0 | 1202c0af"],
  ["/etcdserverpb.Auth/RoleGet", "0a02c0af", "0"],
  ["/etcdserverpb.Auth/UserRevokeRole", "0a02ff611202c0af", "0"],
  ["/etcdserverpb.Auth/RoleDelete", "0a02c0af", "0"],
  ["/etcdserverpb.Auth/UserDelete", "0a02ff61", "0"],
  ["/etcdserverpb.Auth/UserList", "", "0"],
  // grpc-go's health service decodes with golang/protobuf, which checks UTF-8.
  ["/grpc.health.v1.Health/Check", "0a02ff61", '13 grpc: error unmarshalling request: proto: field "grpc.health.v1.HealthCheckRequest.service" contains invalid UTF-8'],
  // Compares with a result or target etcd does not know (succeeded = field 2, absent when false).
  ["/etcdserverpb.KV/Txn", "0a0508091a0161", "0 | 1001"],
  ["/etcdserverpb.KV/Txn", "0a07080110091a0161", "0"],
  ["/etcdserverpb.KV/Txn", "0a0510091a0161", "0 | 1001"],
  ["/etcdserverpb.KV/Txn", "0a0610091a027a7a", "0 | 1001"],
  ["/etcdserverpb.KV/Txn", "0a08080310091a027a7a", "0"],
  ["/etcdserverpb.KV/Txn", "0a07080910031a0161", "0 | 1001"],
  ["/etcdserverpb.KV/Txn", "0a08080910031a027a7a", "0"],
  ["/etcdserverpb.KV/Txn", "0a08080910011a027a7a", "0 | 1001"],
  // A sort order etcd does not know sorts nothing, whatever the target: key order.
  ["/etcdserverpb.KV/Range", "0a0130120100280930024001", "0 | 12090a013010031803200112090a01611002180220012002"],
  ["/etcdserverpb.KV/Range", "0a0130120100280930025001", "0 | 120f0a01301003180320012a047a65726f120c0a01611002180220012a01622002"],
  // An alarm type etcd does not know (9): GET lists none of it until it is raised; raised
  // for member 5 it is stored, listed by GET of it and of NONE (alarms = field 2: memberID
  // 5, alarm 9), caps nothing (the put goes through), and DEACTIVATE clears it.
  ["/etcdserverpb.Maintenance/Alarm", "08001809", "0"],
  ["/etcdserverpb.Maintenance/Alarm", "080110051809", "0 | 120408051009"],
  ["/etcdserverpb.Maintenance/Alarm", "08001809", "0 | 120408051009"],
  ["/etcdserverpb.Maintenance/Alarm", "", "0 | 120408051009"],
  ["/etcdserverpb.KV/Put", "0a0163120164", "0"],
  ["/etcdserverpb.Maintenance/Alarm", "080210051809", "0 | 120408051009"],
  ["/etcdserverpb.Maintenance/Alarm", "", "0"],
  // A permission type etcd does not know (9) on key "a": stored, listed by RoleGet with its
  // number (perm = field 2).
  ["/etcdserverpb.Auth/RoleAdd", "0a0172", "0"],
  ["/etcdserverpb.Auth/RoleGrantPermission", "0a017212050809120161", "0"],
  ["/etcdserverpb.Auth/RoleGet", "0a0172", "0 | 12050809120161"],
  ["/etcdserverpb.Auth/RoleDelete", "0a0172", "0"],
];

test(`request bytes decoded as etcd 3.4.23 decodes them (${kind})`, { skip: !installed("etcdctl"), timeout: 60_000 }, async () => {
  const got: string[] = [];
  for (const [path, hex] of CASES) got.push(`${path} ${hex} => ${await call(path, hex)}`);
  if (process.env["GRPC_DECODE_PRINT"] === "1") console.log(got.join("\n"));
  assert.deepEqual(
    got,
    CASES.map(([path, hex, want]) => `${path} ${hex} => ${want}`),
  );
});
