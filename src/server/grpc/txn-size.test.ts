// The txn size the gateway and the Lock/Election services check against --max-request-bytes
// (../http/v3-proto-size.ts) is the protobuf encoding etcd sizes: checked here against the
// generated encoder, with each compare's target_union set as the sender set it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { TxnRequestSchema } from "./gen/etcd/etcdserver/etcdserverpb/rpc_pb.ts";
import { decodeTxn } from "../http/v3-decode.ts";
import { readRequestBody } from "../http/v3-json.ts";
import { messageFields } from "../http/v3-wire.ts";
import { txnRequestSize } from "../http/v3-proto-size.ts";
import { campaignTxn, lockTxn, proclaimTxn, resignTxn } from "../http/v3-concurrency.ts";

type Union = MessageInitShape<typeof TxnRequestSchema>["compare"] extends (infer C)[] | undefined ? (C extends { targetUnion?: infer U } ? U : never) : never;

const key = Buffer.from("k");
const b64 = (s: string): string => Buffer.from(s).toString("base64");
const TARGET = { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3, LEASE: 4 } as const;

/** A gateway txn of one compare on k (its target and the union members `json` names) and one put. */
function gatewaySize(target: keyof typeof TARGET, json: string): number {
  const body = `{"compare":[{"key":"${b64("k")}","target":"${target}"${json}}],"success":[{"request_put":{"key":"${b64("k")}","value":"${b64("vvv")}"}}]}`;
  const r = readRequestBody(Buffer.from(body));
  assert.ok(!("error" in r));
  return txnRequestSize(decodeTxn(messageFields(r.node)));
}

function encodedSize(target: keyof typeof TARGET, union: Union | undefined): number {
  const cmp = { key, target: TARGET[target], ...(union === undefined ? {} : { targetUnion: union }) };
  return toBinary(TxnRequestSchema, create(TxnRequestSchema, { compare: [cmp], success: [{ request: { case: "requestPut", value: { key, value: Buffer.from("vvv") } } }] })).length;
}

const cases: Array<{ what: string; target: keyof typeof TARGET; json: string; union: Union | undefined }> = [
  { what: "no operand sent", target: "CREATE", json: "", union: undefined },
  { what: "create_revision sent as 0", target: "CREATE", json: ',"create_revision":"0"', union: { case: "createRevision", value: 0n } },
  { what: "create_revision as a JSON number 0", target: "CREATE", json: ',"createRevision":0', union: { case: "createRevision", value: 0n } },
  { what: "create_revision 1", target: "CREATE", json: ',"create_revision":"1"', union: { case: "createRevision", value: 1n } },
  { what: "version 0 (target and result 0 as well)", target: "VERSION", json: ',"version":"0"', union: { case: "version", value: 0n } },
  { what: "mod_revision 0", target: "MOD", json: ',"mod_revision":"0"', union: { case: "modRevision", value: 0n } },
  { what: "an empty value", target: "VALUE", json: ',"value":""', union: { case: "value", value: new Uint8Array() } },
  { what: "lease 0", target: "LEASE", json: ',"lease":"0"', union: { case: "lease", value: 0n } },
  { what: "an operand of another kind than the target", target: "CREATE", json: ',"mod_revision":"300"', union: { case: "modRevision", value: 300n } },
];

for (const c of cases) {
  test(`a gateway txn's size is its protobuf encoding: ${c.what}`, () => {
    assert.equal(gatewaySize(c.target, c.json), encodedSize(c.target, c.union));
  });
}

test("Lock and Election's txns are sized as clientv3 sends them: every compare's operand set, 0 included", () => {
  const lease = 7n;
  type TxnInit = MessageInitShape<typeof TxnRequestSchema>;
  const enc = (rev: number, success: TxnInit["success"], failure: TxnInit["failure"] = []): number => {
    const compare: TxnInit["compare"] = [{ key, target: TARGET.CREATE, targetUnion: { case: "createRevision", value: BigInt(rev) } }];
    return toBinary(TxnRequestSchema, create(TxnRequestSchema, { compare, success, failure } as TxnInit)).length;
  };
  const put = (value: string) => ({ request: { case: "requestPut" as const, value: { key, value: Buffer.from(value), lease } } });
  const range = { request: { case: "requestRange" as const, value: { key } } };
  assert.equal(txnRequestSize(campaignTxn(key, Buffer.from("v"), lease)), enc(0, [put("v")], [range]));
  assert.equal(txnRequestSize(proclaimTxn(key, 5, Buffer.from("w"), lease)), enc(5, [put("w")]));
  assert.equal(txnRequestSize(resignTxn(key, 5)), enc(5, [{ request: { case: "requestDeleteRange", value: { key } } }]));
  const lock = lockTxn(Buffer.from("l/"), key, lease);
  assert.equal(lock.compare.length, 1);
  // The compare field: tag and length (2), target CREATE (2), key "k" (3), create_revision 0 (2).
  assert.equal(txnRequestSize(lock) - txnRequestSize({ ...lock, compare: [] }), 9);
});
