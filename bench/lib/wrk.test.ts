// Unit tests of lib/wrk.ts and of the Lua scripts' identity with the shared harness.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseWrkOutput, WRK_DIR } from "./wrk.ts";

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
