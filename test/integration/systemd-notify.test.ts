// Type=notify as Debian's etcd.service uses it: `bin/kvctl serve` started directly (as
// systemd's ExecStart does) with NOTIFY_SOCKET set sends READY=1 from its own PID once
// the member has published itself. The receiving socket is a Unix datagram socket bound by
// perl (node cannot bind one), standing in for systemd.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { singleMemberFlags, spawnServer } from "../helpers/spawned.ts";

const repo = join(import.meta.dirname, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "kvctl-notify-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const hasPerl = spawnSync("perl", ["-MSocket", "-e", "1"]).status === 0;

/** Binds a datagram socket at `path`, prints "bound", then the first datagram, and exits. */
function receiver(path: string): { bound: Promise<void>; message: Promise<string> } {
  const script = `use Socket; $| = 1; socket(my $s, PF_UNIX, SOCK_DGRAM, 0) or die "socket: $!"; bind($s, pack_sockaddr_un($ARGV[0])) or die "bind: $!"; print "bound\\n"; recv($s, my $buf, 4096, 0); print $buf;`;
  const p = spawn("perl", ["-e", script, path], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  let onBound: () => void = () => {};
  const bound = new Promise<void>((r) => (onBound = r));
  p.stdout.on("data", (c: Buffer) => {
    out += c.toString();
    if (out.startsWith("bound\n")) onBound();
  });
  const message = new Promise<string>((resolve) => p.once("exit", () => resolve(out.slice("bound\n".length))));
  return { bound, message };
}

test("bin/kvctl serve under NOTIFY_SOCKET tells the socket READY=1 from the process systemd started", { skip: hasPerl ? false : "perl is not installed" }, async () => {
  const socketPath = join(dir, "notify");
  const r = receiver(socketPath);
  await r.bound;
  const url = "http://127.0.0.1:34871";
  const server = spawnServer(join(repo, "bin", "kvctl"), ["serve", ...singleMemberFlags(join(dir, "data"), url, "http://127.0.0.1:34872")], repo, { ...process.env, NOTIFY_SOCKET: socketPath });
  try {
    const timeout = new Promise<string>((_, reject) => setTimeout(() => reject(new Error(`no READY=1 within 20 s:\n${server.log()}`)), 20_000));
    const msg = await Promise.race([r.message, timeout]);
    assert.equal(msg, `READY=1\nMAINPID=${server.child.pid}\n`, "one datagram, from the PID the unit's ExecStart started (the launcher execs, never forks)");
    assert.match(server.log(), /notified systemd that the member is ready/);
    const res = await fetch(`${url}/v2/keys/ready`, { method: "PUT", body: new URLSearchParams({ value: "1" }) });
    assert.equal(res.status, 201, "the member serves after notifying");
  } finally {
    await server.stop();
  }
});

test("without NOTIFY_SOCKET nothing is sent and nothing is logged about systemd", async () => {
  const url = "http://127.0.0.1:34873";
  const env = { ...process.env };
  delete env["NOTIFY_SOCKET"];
  const server = spawnServer(join(repo, "bin", "kvctl"), ["serve", ...singleMemberFlags(join(dir, "data2"), url, "http://127.0.0.1:34874")], repo, env);
  try {
    for (let i = 0; i < 100 && !server.log().includes("published member attributes"); i++) await new Promise((res) => setTimeout(res, 100));
    assert.match(server.log(), /published member attributes/);
    assert.doesNotMatch(server.log(), /systemd/);
  } finally {
    await server.stop();
  }
});
