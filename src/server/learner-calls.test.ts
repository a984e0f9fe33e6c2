import { test } from "node:test";
import assert from "node:assert/strict";
import { GrpcCode } from "../api/v3-errors.ts";
import { LEARNER_REFUSAL_MESSAGE, RANGE_METHOD, STATUS_METHOD, learnerRefusal, learnerRefuses, learnerRefusesRoute } from "./learner-calls.ts";

test("a learner serves Status and serializable Range only, as etcd's isRPCSupportedForLearner", () => {
  assert.equal(learnerRefuses(STATUS_METHOD, false), false);
  assert.equal(learnerRefuses(RANGE_METHOD, true), false);
  assert.equal(learnerRefuses(RANGE_METHOD, false), true);
  for (const path of [
    "/etcdserverpb.KV/Put",
    "/etcdserverpb.KV/Txn",
    "/etcdserverpb.KV/DeleteRange",
    "/etcdserverpb.KV/Compact",
    "/etcdserverpb.Lease/LeaseGrant",
    "/etcdserverpb.Lease/LeaseKeepAlive",
    "/etcdserverpb.Watch/Watch",
    "/etcdserverpb.Cluster/MemberList",
    "/etcdserverpb.Maintenance/Snapshot",
    "/etcdserverpb.Maintenance/Hash",
    "/etcdserverpb.Auth/Authenticate",
    "/v3lockpb.Lock/Lock",
    "/v3electionpb.Election/Observe",
    "/grpc.health.v1.Health/Check",
  ]) {
    assert.equal(learnerRefuses(path, true), true, path);
  }
});

test("gateway routes map onto the same rule", () => {
  assert.equal(learnerRefusesRoute("maintenance/status", false), false);
  assert.equal(learnerRefusesRoute("kv/range", true), false);
  assert.equal(learnerRefusesRoute("kv/range", false), true);
  for (const route of ["kv/put", "kv/txn", "watch", "lease/keepalive", "lease/grant", "cluster/member/list", "maintenance/snapshot", "election/observe", "lock/lock"]) {
    assert.equal(learnerRefusesRoute(route, true), true, route);
  }
});

test("the refusal is etcd's: Unavailable with its wording", () => {
  const err = learnerRefusal();
  assert.equal(err.code, GrpcCode.Unavailable);
  assert.equal(err.message, LEARNER_REFUSAL_MESSAGE);
  assert.equal(err.message, "etcdserver: rpc not supported for learner");
});
