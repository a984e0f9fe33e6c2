import assert from "node:assert/strict";
import { test } from "node:test";
import { chooseAlpn } from "./mux.ts";

test("ALPN: gRPC clients offer h2 alone and get it; HTTP/1.1-capable clients keep HTTP/1.1", () => {
  assert.equal(chooseAlpn(["h2"]), "h2");
  assert.equal(chooseAlpn(["h2", "http/1.1"]), "http/1.1");
  assert.equal(chooseAlpn(["http/1.1"]), "http/1.1");
  assert.equal(chooseAlpn(["acme-tls/1"]), undefined);
});
