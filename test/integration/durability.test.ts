// Durability: `kill -9` a member in the middle of concurrent writes, restart it on the same
// data dir, and check that every acknowledged write is there with the same index. Then the
// WAL recovery rules through a real process: a torn tail is repaired, a corrupt record
// before the tail refuses to start and names the file and offset.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, statSync, openSync, writeSync, readSync, closeSync } from "node:fs";
import { join } from "node:path";
import { agent, http, until } from "../helpers/http.ts";
import { startServer, type TestServer } from "../helpers/server.ts";

after(() => agent.destroy());

function walFiles(dataDir: string): string[] {
  const dir = join(dataDir, "member", "wal");
  return readdirSync(dir).filter((f) => f.endsWith(".wal")).sort().map((f) => join(dir, f));
}

test("every acknowledged write survives kill -9 under concurrent load, with the same index", async () => {
  const srv: TestServer = await startServer();
  after(() => srv.stop("SIGKILL"));
  const acked = new Map<string, { value: string; index: number }>();
  for (let round = 0; round < 3; round++) {
    let stop = false;
    const writers = Array.from({ length: 16 }, async (_, w) => {
      for (let i = 0; !stop && i < 100_000; i++) {
        const key = `/dur/r${round}-w${w}-${i}`;
        const value = `v${round}.${w}.${i}`;
        try {
          const r = await http("PUT", `${srv.url}/v2/keys${key}`, { value });
          if (r.status === 201 || r.status === 200) {
            const ev = JSON.parse(r.body) as { node: { modifiedIndex: number } };
            acked.set(key, { value, index: ev.node.modifiedIndex });
          }
        } catch {
          return; // the server died mid-request: this write was not acknowledged
        }
      }
    });
    // Let writes flow (200 acknowledged this round), then kill without warning while 16
    // more are in flight.
    const before = acked.size;
    await until(() => acked.size >= before + 200, 20_000, `200 writes acknowledged in round ${round}`);
    await srv.kill("SIGKILL");
    stop = true;
    await Promise.all(writers);
    await srv.restart();
    let missing = 0;
    for (const [key, want] of acked) {
      const r = await http("GET", `${srv.url}/v2/keys${key}`);
      const got = r.status === 200 ? (JSON.parse(r.body) as { node: { value: string; modifiedIndex: number } }).node : undefined;
      if (!got || got.value !== want.value || got.modifiedIndex !== want.index) missing++;
    }
    assert.equal(missing, 0, `round ${round}: ${missing} of ${acked.size} acknowledged writes lost or changed`);
  }
  assert.ok(acked.size >= 300, `too few writes were acknowledged to prove anything (${acked.size})`);
});

test("a torn WAL tail is truncated and reported, and the member starts", async () => {
  const srv = await startServer();
  after(() => srv.stop("SIGKILL"));
  for (let i = 0; i < 20; i++) assert.equal((await http("PUT", `${srv.url}/v2/keys/torn/k${i}`, { value: String(i) })).status, 201);
  await srv.kill("SIGKILL");
  const last = walFiles(srv.dataDir).at(-1)!;
  // Append half a record's worth of garbage-free bytes: a write the crash cut short.
  const fd = openSync(last, "r+");
  const size = findLogicalEnd(last);
  writeSync(fd, Buffer.from([0x30, 0x00, 0x00, 0x00, 0x12, 0x34]), 0, 6, size);
  closeSync(fd);
  await srv.restart();
  const r = await http("GET", `${srv.url}/v2/keys/torn/k19`);
  assert.equal(r.status, 200);
  assert.match(srv.logs(), /torn|repair/i);
});

test("a corrupt WAL record before the tail refuses to start and names file and offset", async () => {
  const srv = await startServer();
  after(() => srv.stop("SIGKILL"));
  for (let i = 0; i < 50; i++) assert.equal((await http("PUT", `${srv.url}/v2/keys/corrupt/k${i}`, { value: "x".repeat(40) })).status, 201);
  await srv.kill("SIGTERM");
  const file = walFiles(srv.dataDir)[0]!;
  const end = findLogicalEnd(file);
  // Flip a byte in the middle of the written part: a record that is not the last one.
  const at = Math.floor(end / 2);
  const fd = openSync(file, "r+");
  const b = Buffer.alloc(1);
  readSync(fd, b, 0, 1, at);
  b[0] = b[0]! ^ 0xff;
  writeSync(fd, b, 0, 1, at);
  closeSync(fd);
  const code = await srv.restartExpectingExit();
  assert.notEqual(code, 0);
  const logs = srv.logs();
  assert.ok(logs.includes(file.split("/").at(-1)!), `log does not name the file:\n${logs.slice(-2000)}`);
  assert.match(logs, /offset/i);
});

/** The end of written data in a (possibly preallocated, zero-filled) segment. */
function findLogicalEnd(file: string): number {
  const size = statSync(file).size;
  const fd = openSync(file, "r");
  const buf = Buffer.alloc(Math.min(size, 64 << 20));
  readSync(fd, buf, 0, buf.length, 0);
  closeSync(fd);
  let end = buf.length;
  while (end > 0 && buf[end - 1] === 0) end--;
  // Records are 8-byte aligned in most layouts; stay on the safe side of the last byte.
  return Math.ceil(end / 8) * 8;
}

