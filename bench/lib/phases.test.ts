// Unit tests of lib/phases.ts's pure parts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { BENCH_AUTH } from "./auth.ts";
import { wrkPrefix } from "./phases.ts";
import { WRK_ROWS } from "./results.ts";

const authPattern = BENCH_AUTH.pattern.replace(/\*$/, "");

for (const spec of WRK_ROWS) {
  test(`wrkPrefix of ${spec.id} ${spec.auth === true ? "lies under the bench role's pattern" : "is the row id, server and time"}`, () => {
    for (const phase of ["warm", "run"] as const) {
      const p = wrkPrefix(spec, "kvctl", phase, 42);
      assert.ok(p.includes(`${spec.id}-kvctl-42`));
      // keys are /<prefix>/<tid>-<n>: etcd's simpleMatch is a prefix match on that path
      if (spec.auth === true) assert.ok(`/${p}/0-1`.startsWith(authPattern), p);
      else assert.equal(p, phase === "warm" ? `warm-${spec.id}-kvctl-42` : `${spec.id}-kvctl-42`);
    }
  });
}

test("every auth row names an existing no-auth row with the same connections", () => {
  const auth = WRK_ROWS.filter((r) => r.auth === true);
  assert.equal(auth.length, 2);
  for (const a of auth) {
    const plain = WRK_ROWS.find((r) => r.id === a.noAuthRow);
    assert.ok(plain !== undefined && plain.auth !== true, a.id);
    assert.equal(plain.connections, a.connections);
    assert.equal(a.group, "auth");
  }
});
