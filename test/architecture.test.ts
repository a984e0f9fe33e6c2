// Fails on an import edge DESIGN.md §2 forbids: the layering is what keeps the pure core
// (raft, stores, auth, wal) testable without I/O, and the client free of server code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, dirname, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const src = join(root, "src");

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : p.endsWith(".ts") && !p.endsWith(".test.ts") ? [p] : [];
  });
}

/** The top-level area of a file under src/: "raft", "store/v2", "server", "cli", ... */
function area(file: string): string {
  const rel = relative(src, file).split("/");
  return rel[0] === "store" ? `store/${rel[1]}` : rel[0]!;
}

/** Which areas each area may import (besides itself). */
const allowed: Record<string, readonly string[]> = {
  api: [],
  raft: [],
  wal: [],
  "store/v2": ["api"],
  "store/v3": ["api"],
  backend: ["store/v3", "api"],
  auth: ["api"],
  transport: ["raft", "api"],
  client: ["api"],
  cli: ["client", "api"],
  server: ["store/v2", "store/v3", "backend", "auth", "raft", "wal", "transport", "api"],
};

const importRe = /(?:import|export)\s[^'"]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

test("no source file imports across a forbidden edge", () => {
  const violations: string[] = [];
  for (const file of walk(src)) {
    const from = area(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(importRe)) {
      const spec = m[1] ?? m[2]!;
      if (!spec.startsWith(".")) continue;
      const target = resolve(dirname(file), spec);
      const to = area(target);
      // Test helpers are shared by the unit tests of every area (src/prng.test-helper.ts);
      // no code that runs in a member or the CLI may import one.
      if (target.endsWith(".test-helper.ts")) {
        if (!file.endsWith(".test-helper.ts")) violations.push(`${relative(root, file)} -> ${spec} (runtime code imports a test helper)`);
        continue;
      }
      if (to === from) continue;
      const isServeCommand = relative(src, file) === "cli/commands/serve.ts" && to === "server";
      if (isServeCommand) continue;
      // `kvctl v3 snapshot status|restore` read a backup file and write a new member's data
      // dir offline, as serve opens one: the backup format and restore live with the server.
      const isSnapshotCommand = relative(src, file) === "cli/commands/v3/snapshot.ts" && to === "server";
      if (isSnapshotCommand) continue;
      // `kvctl backup` (etcdctl v2's) copies a stopped member's WAL and snapshot offline.
      if (relative(src, file) === "cli/commands/backup.ts" && to === "server") continue;
      if (!(allowed[from] ?? []).includes(to)) violations.push(`${relative(root, file)} -> ${spec} (${from} -> ${to})`);
    }
  }
  assert.deepEqual(violations, []);
});

test("raft imports no node builtins and no clock", () => {
  const offenders = walk(join(src, "raft")).filter((f) => /from\s+["']node:|Date\.now\(|setTimeout\(|Math\.random\(/.test(readFileSync(f, "utf8")));
  assert.deepEqual(offenders.map((f) => relative(root, f)), []);
});

// The HTTP handlers, the v3 API, the metrics, the lease keeper and every other job around
// the member see it through the narrow host interfaces declared beside them (V2KeysHost,
// AuthAccessHost, InfoHost, V3Backend, V3ServiceHost, MemberMetricsHost, LeaseKeeperHost,
// ...): what a module may touch is written down there, and a fake for its unit test needs
// only that. Only the assembly that constructs the member (src/server/index.ts) names it.
test("no module but the server assembly imports the KvServer", () => {
  const kvServer = join(src, "server", "kv-server.ts");
  const assembly = join(src, "server", "index.ts");
  const offenders: string[] = [];
  for (const file of walk(src).filter((f) => f !== kvServer && f !== assembly && !f.endsWith(".test-helper.ts"))) {
    for (const m of readFileSync(file, "utf8").matchAll(importRe)) {
      const spec = m[1] ?? m[2]!;
      if (spec.startsWith(".") && resolve(dirname(file), spec) === kvServer) offenders.push(`${relative(root, file)} -> ${spec}`);
    }
  }
  assert.deepEqual(offenders, []);
});
