// Type=notify as Debian's etcd.service uses it: `bin/kvctl serve` started directly (as
// systemd's ExecStart does) with NOTIFY_SOCKET set sends READY=1 from its own PID once
// the member has published itself. The receiving socket is a Unix datagram socket bound by
// perl (test/helpers/notify-socket.ts), standing in for systemd.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { hasPerlSocket, notifySocket, withinMs } from "../helpers/notify-socket.ts";
import { freePort } from "../helpers/server.ts";
import { singleMemberFlags, spawnServer } from "../helpers/spawned.ts";
import { until } from "../helpers/http.ts";

const repo = join(import.meta.dirname, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "kvctl-notify-"));
after(() => rmSync(dir, { recursive: true, force: true }));

test("bin/kvctl serve under NOTIFY_SOCKET tells the socket READY=1 from the process systemd started", { skip: hasPerlSocket ? false : "perl is not installed" }, async () => {
  const socketPath = join(dir, "notify");
  const r = notifySocket(socketPath);
  await r.bound;
  const url = `http://127.0.0.1:${await freePort()}`;
  const server = spawnServer(join(repo, "bin", "kvctl"), ["serve", ...singleMemberFlags(join(dir, "data"), url, `http://127.0.0.1:${await freePort()}`)], repo, { ...process.env, NOTIFY_SOCKET: socketPath });
  try {
    const msg = await withinMs(r.message, 20_000, () => `no READY=1 within 20 s:\n${server.log()}`);
    assert.equal(msg, `READY=1\nMAINPID=${server.child.pid}\n`, "one datagram, from the PID the unit's ExecStart started (the launcher execs, never forks)");
    const res = await fetch(`${url}/v2/keys/ready`, { method: "PUT", body: new URLSearchParams({ value: "1" }) });
    assert.equal(res.status, 201, "the member serves after notifying");
  } finally {
    r.close();
    await server.stop();
  }
});

test("without NOTIFY_SOCKET nothing is sent and nothing is logged about systemd", async () => {
  const url = `http://127.0.0.1:${await freePort()}`;
  const env = { ...process.env };
  delete env["NOTIFY_SOCKET"];
  const server = spawnServer(join(repo, "bin", "kvctl"), ["serve", ...singleMemberFlags(join(dir, "data2"), url, `http://127.0.0.1:${await freePort()}`)], repo, env);
  try {
    await until(() => server.log().includes("published member attributes"), 10_000, "the member published", () => server.log());
    assert.doesNotMatch(server.log(), /systemd/);
  } finally {
    await server.stop();
  }
});
