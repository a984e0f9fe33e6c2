import { test } from "node:test";
import assert from "node:assert/strict";
import { isHostWhitelisted, requestHostname } from "./host-whitelist.ts";

const hostnames: [string, string][] = [
  ["example.com:2379", "example.com"],
  ["example.com", "example.com"],
  ["[::1]:2379", "::1"],
  ["[::1]", "[::1]"],
  ["127.0.0.1:80", "127.0.0.1"],
  ["", ""],
];
for (const [host, want] of hostnames) {
  test(`requestHostname gives ${JSON.stringify(want)} for Host ${JSON.stringify(host)} as Go's GetHostname`, () => {
    assert.equal(requestHostname(host), want);
  });
}

const decisions: { list: string[]; host: string; allowed: boolean }[] = [
  { list: [], host: "anything", allowed: true },
  { list: ["*"], host: "anything", allowed: true },
  { list: ["example.com"], host: "example.com", allowed: true },
  { list: ["example.com"], host: "EXAMPLE.com", allowed: false },
  { list: ["example.com"], host: "localhost", allowed: false },
  { list: ["example.com"], host: "127.0.0.1", allowed: false },
];
for (const d of decisions) {
  test(`isHostWhitelisted ${d.allowed ? "admits" : "refuses"} ${d.host} with [${d.list.join(",")}]`, () => {
    assert.equal(isHostWhitelisted(d.list, d.host), d.allowed);
  });
}
