// Unit tests of lib/wrk.ts and of the Lua scripts' identity with the shared harness.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { wrkCredentials } from "./auth.ts";
import { basicAuth, VALUE64 } from "./http.ts";
import { parseWrkOutput, runWrkRaw, WRK_DIR } from "./wrk.ts";

const WRK_LINE =
  'WRKJSON {"duration_us":2000000,"requests":5000,"bytes":1,"errors":{"connect":1,"read":2,"write":0,"status":7,"timeout":3},' +
  '"latency_us":{"min":10,"mean":100.5,"stdev":3.0,"max":9000,"p50":400,"p90":800,"p99":2500,"p999":5000}}';

test("parseWrkOutput reads the WRKJSON line among wrk's other output", () => {
  const w = parseWrkOutput(`Running 2s test\n  2 threads\n${WRK_LINE}\n`);
  assert.ok(w !== null);
  assert.equal(w.rps, 2500);
  assert.equal(w.p50_ms, 0.4);
  assert.equal(w.p99_ms, 2.5);
  assert.equal(w.max_ms, 9);
  assert.equal(w.socket_errors, 6);
  assert.equal(w.non2xx, 7);
});

for (const bad of ["", "Running 2s test\n", "WRKJSON {not json", 'WRKJSON {"requests":1}']) {
  test(`parseWrkOutput returns null when the output is ${JSON.stringify(bad.slice(0, 20))}`, () => {
    assert.equal(parseWrkOutput(bad), null);
  });
}

const SHARED_WRK = join(fileURLToPath(new URL("../../../shared/bench/lib/wrk/", import.meta.url)));
for (const f of ["common.lua", "v2-put-unique.lua", "v2-put-same.lua", "v2-get.lua", "v2-get-quorum.lua", "v2-cas.lua"]) {
  test(`wrk script ${f} is identical to the shared harness's when the harness is present`, (t) => {
    if (!existsSync(join(SHARED_WRK, f))) {
      t.skip("shared harness not beside the project");
      return;
    }
    assert.equal(readFileSync(join(WRK_DIR, f), "utf8"), readFileSync(join(SHARED_WRK, f), "utf8"));
  });
}

/** Lines of a Lua script that are code (not blank, not comments). */
function codeLines(file: string): string[] {
  return readFileSync(join(WRK_DIR, file), "utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("--"));
}

const AUTH_SCRIPTS: { auth: string; plain: string }[] = [
  { auth: "v2-get-auth.lua", plain: "v2-get.lua" },
  { auth: "v2-put-unique-auth.lua", plain: "v2-put-unique.lua" },
];
for (const c of AUTH_SCRIPTS) {
  test(`wrk script ${c.auth} keeps every line of ${c.plain} (the same request plus the header)`, () => {
    const auth = codeLines(c.auth);
    // the plain script's init only parses the args; the auth one does that and sets the header
    for (const line of codeLines(c.plain).filter((l) => l !== "function init(args) parse_args(args) end")) assert.ok(auth.includes(line), line);
    assert.ok(auth.some((l) => l.includes('"Basic " .. b64(args[2])')));
  });
}

const hasWrk = spawnSync("wrk", ["-v"]).error === undefined;

interface Captured {
  readonly method: string;
  readonly url: string;
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  readonly body: string;
}

/** Run one auth script for 1 s, 1 connection, against a stub on 24681 that keeps the first requests. */
async function captureWrk(script: string, scriptArgs: readonly string[]): Promise<{ reqs: Captured[]; output: string; code: number | null }> {
  const reqs: Captured[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      if (reqs.length < 50) reqs.push({ method: req.method ?? "", url: req.url ?? "", authorization: req.headers.authorization, contentType: req.headers["content-type"], body });
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(24681, "127.0.0.1", resolve));
  try {
    const run = await runWrkRaw({ script, url: "http://127.0.0.1:24681", connections: 1, durationS: 1, prefix: "bench-t", scriptArgs });
    return { reqs, ...run };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

test("wrk script v2-get-auth.lua sends Basic credentials on every GET of bench-get/k", { skip: !hasWrk && "wrk not installed" }, async () => {
  const r = await captureWrk("v2-get-auth.lua", [wrkCredentials()]);
  assert.equal(parseWrkOutput(r.output)?.non2xx, 0, r.output);
  assert.ok(r.reqs.length > 1);
  for (const q of r.reqs) {
    assert.deepEqual([q.method, q.url, q.authorization, q.body], ["GET", "/v2/keys/bench-get/k", basicAuth("bencher", "bench-pw"), ""]);
  }
});

test("wrk script v2-put-unique-auth.lua sends Basic credentials on every PUT of a new key under the prefix", { skip: !hasWrk && "wrk not installed" }, async () => {
  const r = await captureWrk("v2-put-unique-auth.lua", ["u:p:w"]);
  assert.equal(parseWrkOutput(r.output)?.non2xx, 0, r.output);
  assert.ok(r.reqs.length > 1);
  const ns = r.reqs.map((q) => Number(/^\/v2\/keys\/bench-t\/0-(\d+)$/.exec(q.url)?.[1]));
  // consecutive counters (wrk may call request() once before the first send)
  assert.deepEqual(ns, ns.map((_, i) => (ns[0] as number) + i), r.reqs.map((q) => q.url).join(" "));
  for (const q of r.reqs) {
    assert.deepEqual([q.method, q.authorization, q.contentType, q.body], ["PUT", basicAuth("u", "p:w"), "application/x-www-form-urlencoded", `value=${VALUE64}`]);
  }
});

test("wrk script v2-get-auth.lua refuses to run when no credentials are passed", { skip: !hasWrk && "wrk not installed" }, async () => {
  const r = await captureWrk("v2-get-auth.lua", []);
  assert.equal(parseWrkOutput(r.output), null);
  assert.equal(r.reqs.length, 0);
  assert.match(r.output, /user:password/);
});
