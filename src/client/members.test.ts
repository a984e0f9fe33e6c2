// goPeerURLs: the Go client's check of member add/update peer URLs (pkg/types NewURLs),
// each message compared with etcdctl 3.4.23's (`member add a <url>` / `member update 1 <urls>`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { ClientError } from "./errors.ts";
import { goPeerURLs } from "./members.ts";

test("accepted URLs come back trimmed, scheme lower-cased, sorted (the body etcdctl sends)", () => {
  assert.deepEqual(goPeerURLs(["http://b:1", " http://a:1 "]), ["http://a:1", "http://b:1"]);
  assert.deepEqual(goPeerURLs(["HTTP://X:1"]), ["http://X:1"]);
  assert.deepEqual(goPeerURLs(["https://[::1]:5", "unix://s:0", "unixs://t:1"]), ["https://[::1]:5", "unix://s:0", "unixs://t:1"]);
  assert.deepEqual(goPeerURLs(["http://x:1?q"]), ["http://x:1"]);
});

const refused: [string, string][] = [
  ["http://x", 'URL address does not have the form "host:port": http://x'],
  ["http:x:1", 'URL address does not have the form "host:port": http:x:1'],
  ["http://x:1,http://y:2", 'URL address does not have the form "host:port": http://x:1,http://y:2'],
  ["x:1", "URL scheme must be http, https, unix, or unixs: x:1"],
  ["ftp://x:1", "URL scheme must be http, https, unix, or unixs: ftp://x:1"],
  ["", "URL scheme must be http, https, unix, or unixs: "],
  ["http://x:1/p", "URL must not contain a path: http://x:1/p"],
  ["http://x:1/", "URL must not contain a path: http://x:1/"],
  ["127.0.0.1:1", 'parse "127.0.0.1:1": first path segment in URL cannot contain colon'],
  [":1", 'parse ":1": missing protocol scheme'],
  ["http://[::1", "parse \"http://[::1\": missing ']' in host"],
];
for (const [url, message] of refused) {
  test(`refuses ${JSON.stringify(url)} as Go does`, () => {
    assert.throws(() => goPeerURLs([url]), (e: unknown) => e instanceof ClientError && e.code === "BAD_PEER_URL" && e.message === message);
  });
}

test("no URL at all", () => {
  assert.throws(() => goPeerURLs([]), (e: unknown) => e instanceof ClientError && e.message === "no valid URLs given");
});
