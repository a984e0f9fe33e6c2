// dueAtOnce: which answers leave a node due at once (a TTL wrapped into the past), so the
// fuzzer waits for both servers' SYNC before comparing more answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { dueAtOnce } from "./v2-timing.ts";
import type { FuzzRequest, RawResponse } from "./v2-raw.ts";

const at = Date.UTC(2026, 10, 26, 4, 16, 54);
const req = (target: string, body?: string): FuzzRequest => ({ method: "PUT", target, headers: [], mayBlock: false, ...(body === undefined ? {} : { body }) });
const answer = (status: number, body: object): RawResponse => ({ status, headers: new Map([["content-type", "application/json"]]), body: JSON.stringify(body), at });

const cases: Array<{ name: string; req: FuzzRequest; res: RawResponse; due: boolean }> = [
  { name: "an update whose expiration wrapped to 1688", req: req("/v2/keys/k?ttl=99999999999&prevExist=true"), res: answer(200, { action: "update", node: { key: "/k", expiration: "1688-06-13T16:34:50.955778862Z", ttl: -9223372036 } }), due: true },
  { name: "a CAS with a TTL in the future", req: req("/v2/keys/k?ttl=600&prevValue=v"), res: answer(200, { action: "compareAndSwap", node: { key: "/k", expiration: "2026-11-26T04:26:54Z", ttl: 600 } }), due: false },
  { name: "a set with the wrapped TTL (made permanent)", req: req("/v2/keys/k?ttl=99999999999"), res: answer(201, { action: "set", node: { key: "/k" } }), due: false },
  { name: "noValueOnSuccess: the TTL read from the form, body first", req: req("/v2/keys/k?ttl=600", "ttl=99999999999&prevExist=true&noValueOnSuccess=true"), res: answer(200, { action: "update" }), due: true },
  { name: "noValueOnSuccess with a TTL that does not wrap", req: req("/v2/keys/k?ttl=99999999999", "ttl=3600&prevExist=true&noValueOnSuccess=true"), res: answer(200, { action: "update" }), due: false },
  { name: "an error", req: req("/v2/keys/k?ttl=99999999999&prevExist=true"), res: answer(404, { errorCode: 100 }), due: false },
];

for (const c of cases) {
  test(`dueAtOnce is ${c.due} for ${c.name}`, () => {
    assert.equal(dueAtOnce(c.req, c.res), c.due);
  });
}
