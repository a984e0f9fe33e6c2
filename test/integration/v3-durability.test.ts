// Durability of the v3 key space: `kill -9` a member in the middle of concurrent v3 puts
// and deletes (the database commits every --backend-batch-interval, so at any moment the
// WAL holds acknowledged writes the database file does not), restart it on the same data
// dir, and check that every acknowledged write is there with the revision it was
// acknowledged at (unless a delete of it was sent and never answered: that one may have
// been applied), that every acknowledged delete stayed deleted, and that the revision
// never went back. Snapshots every 500 entries put a snapshot inside some of the windows.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { agent } from "../helpers/http.ts";
import { mulberry32 } from "../helpers/prng.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

after(() => agent.destroy());

const b64 = (s: string): string => Buffer.from(s).toString("base64");
const unb64 = (s: string | undefined): string => Buffer.from(s ?? "", "base64").toString();

interface V3Header {
  revision?: string;
}

async function v3<T>(url: string, path: string, body: unknown): Promise<{ status: number; json: T }> {
  const r = await fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body) });
  return { status: r.status, json: (await r.json()) as T };
}

test("every acknowledged v3 put and delete survives kill -9 under concurrent load, at its revision", { timeout: 120_000 }, async () => {
  const srv: TestServer = await startServer({ flags: ["--snapshot-count", "500"] });
  after(() => srv.stop("SIGKILL"));
  const seed = Number(process.env["V3_DURABILITY_SEED"] ?? 20261126);
  const rnd = mulberry32(seed);
  /** key -> the last acknowledged outcome: a value at a revision, or deleted at a revision. */
  const acked = new Map<string, { value: string | null; revision: number }>();
  /** Keys whose delete was sent and never answered: it may or may not have been applied. */
  const maybeDeleted = new Set<string>();
  let highest = 0;
  // Three rounds at least, more (up to 8) while too few writes were acknowledged to prove
  // anything: a loaded machine acknowledges fewer in the same 300-1100 ms windows.
  for (let round = 0; round < 3 || (acked.size < 300 && round < 8); round++) {
    let stop = false;
    const writers = Array.from({ length: 12 }, async (_, w) => {
      for (let i = 0; !stop && i < 100_000; i++) {
        // A few keys are written again and deleted, so older revisions of the same key matter.
        const key = `dur3/r${round}-w${w}-${i % 40 === 39 ? i - 1 : i}`;
        try {
          if (i % 40 === 39) {
            maybeDeleted.add(key);
            const r = await v3<{ header: V3Header; deleted?: string }>(srv.url, "/v3/kv/deleterange", { key: b64(key) });
            if (r.status === 200) acked.set(key, { value: null, revision: Number(r.json.header.revision) });
            maybeDeleted.delete(key);
          } else {
            const value = `v${round}.${w}.${i}`;
            const r = await v3<{ header: V3Header }>(srv.url, "/v3/kv/put", { key: b64(key), value: b64(value) });
            if (r.status === 200) acked.set(key, { value, revision: Number(r.json.header.revision) });
          }
        } catch {
          return; // the member died mid-request: not acknowledged
        }
      }
    });
    // Kill at a point that differs per round (and per seed): 300-1100 ms into the writes.
    const killAfter = 300 + Math.floor(rnd() * 800);
    await new Promise((r) => setTimeout(r, killAfter));
    await srv.kill("SIGKILL");
    stop = true;
    await Promise.all(writers);
    await srv.restart();
    const all = await v3<{ header: V3Header; kvs?: { key: string; value: string; mod_revision: string }[] }>(srv.url, "/v3/kv/range", { key: b64("dur3/"), range_end: b64("dur30") });
    assert.equal(all.status, 200);
    const revision = Number(all.json.header.revision);
    const present = new Map((all.json.kvs ?? []).map((kv) => [unb64(kv.key), { value: unb64(kv.value), revision: Number(kv.mod_revision) }]));
    const lost: string[] = [];
    for (const [key, want] of acked) {
      const got = present.get(key);
      if (want.value === null) {
        // Deleted: gone, unless a later put of the same key (not acknowledged) came after.
        if (got !== undefined && got.revision <= want.revision) lost.push(`${key}: deleted at ${want.revision}, still there at ${got.revision}`);
      } else if (got === undefined) {
        // Gone is fine only if a delete of it was sent and the member died before answering.
        if (!maybeDeleted.has(key)) lost.push(`${key}: put at ${want.revision}, missing`);
      } else if (got.revision === want.revision ? got.value !== want.value : got.revision < want.revision) {
        lost.push(`${key}: put ${want.value} at ${want.revision}, found ${got.value} at ${got.revision}`);
      }
    }
    assert.deepEqual(lost.slice(0, 10), [], `seed ${seed} round ${round} (killed after ${killAfter} ms): ${lost.length} of ${acked.size} acknowledged writes lost or changed`);
    const maxAcked = Math.max(...[...acked.values()].map((a) => a.revision));
    assert.ok(revision >= maxAcked && revision >= highest, `seed ${seed} round ${round}: revision ${revision} after the restart, below an acknowledged ${Math.max(maxAcked, highest)}`);
    highest = revision;
  }
  assert.ok(acked.size >= 300, `too few writes were acknowledged to prove anything (${acked.size})`);
  // The member still takes writes after all that, at a higher revision.
  const after3 = await v3<{ header: V3Header }>(srv.url, "/v3/kv/put", { key: b64("dur3/last"), value: b64("x") });
  assert.equal(after3.status, 200);
  assert.ok(Number(after3.json.header.revision) > highest);
});
