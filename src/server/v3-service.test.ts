// Which path a Txn takes on a member, decided as etcd 3.4's EtcdServer.Txn decides it:
// ranges only (top level) is a read, and a read whose ranges are all serializable waits
// for no ReadIndex round; anything else, a nested txn included, goes through the log.
import assert from "node:assert/strict";
import { test } from "node:test";
import { V3AuthState } from "../auth/index.ts";
import { MvccStore } from "../store/v3/mvcc-store.ts";
import type { TxnRequest } from "../store/v3/types.ts";
import { cmpVersion, opPut, opRange, opTxn, putReq, txnReq } from "../store/v3/v3.test-helper.ts";
import { CompareResult as R } from "../store/v3/types.ts";
import { ServerMetrics } from "./metrics/server-metrics.ts";
import { V3Service, type V3ServiceHost } from "./v3-service.ts";

type Path = "local" | "read index" | "log";

/** A member that records whether a txn made a ReadIndex round or a proposal. */
function member(): { service: V3Service; taken: () => Path } {
  const v3 = new MvccStore();
  v3.put(putReq("a", "1"));
  let reads = 0;
  let proposals = 0;
  const kv = {
    config: { authToken: { type: "simple" } },
    v3,
    v3auth: new V3AuthState(),
    metrics: new ServerMetrics(),
    quotaAvailable: () => true,
    linearizableRead: async () => {
      reads++;
    },
    propose: async () => {
      proposals++;
      return { ok: true, v3: { revision: v3.revision, succeeded: true, responses: [] } };
    },
  };
  const service = new V3Service(kv as unknown as V3ServiceHost);
  return {
    service,
    taken: () => {
      assert.ok(reads + proposals <= 1, `one path at most (${reads} reads, ${proposals} proposals)`);
      return proposals === 1 ? "log" : reads === 1 ? "read index" : "local";
    },
  };
}

async function pathOf(req: TxnRequest): Promise<Path> {
  const m = member();
  await m.service.txn(req, { token: undefined });
  return m.taken();
}

const ser = { serializable: true };

test("a txn whose ranges are all serializable is served locally, with no ReadIndex round", async () => {
  assert.equal(await pathOf(txnReq({ success: [opRange("a", ser)], failure: [opRange("b", ser), opRange("c", ser)] })), "local");
  const m = member();
  const res = await m.service.txn(txnReq({ success: [opRange("a", ser)] }), { token: undefined });
  assert.equal(res.succeeded, true);
  assert.equal((res.responses[0] as { range: { kvs: { value: Buffer }[] } }).range.kvs[0]!.value.toString(), "1");
});

test("a txn with no ops is served locally, as etcd's isTxnSerializable holds for it", async () => {
  assert.equal(await pathOf(txnReq({ compare: [cmpVersion("a", R.EQUAL, 1)] })), "local");
});

test("one linearizable range, in either branch, makes the read wait for a ReadIndex round", async () => {
  assert.equal(await pathOf(txnReq({ success: [opRange("a", ser), opRange("b")] })), "read index");
  assert.equal(await pathOf(txnReq({ success: [opRange("a", ser)], failure: [opRange("b")] })), "read index");
});

test("a put among serializable ranges goes through the log", async () => {
  assert.equal(await pathOf(txnReq({ success: [opRange("a", ser)], failure: [opPut("a", "2")] })), "log");
});

test("a nested txn goes through the log, even of serializable ranges only", async () => {
  assert.equal(await pathOf(txnReq({ success: [opTxn({ success: [opRange("a", ser)] })] })), "log");
  assert.equal(await pathOf(txnReq({ success: [opRange("a", ser)], failure: [opTxn({ failure: [opRange("a")] })] })), "log");
});
