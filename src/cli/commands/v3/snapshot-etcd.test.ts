// `kvctl v3 snapshot status` of a file etcd made: the numbers etcdctl 3.4.23 printed.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { snapshotStatus } from "./snapshot.ts";

const fixture = fileURLToPath(new URL("../../../server/backup/testdata/etcd-3.4.23.snapshot.db", import.meta.url));

test("status of an etcd 3.4.23 snapshot is etcdctl's", async () => {
  // etcdctl snapshot status -w json: {"hash":980336340,"revision":16,"totalKey":27,"totalSize":24576}
  assert.deepEqual(await snapshotStatus(fixture), { hash: 980336340, revision: 16, totalKey: 27, totalSize: 24576 });
});
