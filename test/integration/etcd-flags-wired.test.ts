// The etcd 3.4 flags kvctl once accepted and ignored, now acted on: end to end on real `kvctl serve` processes,
// and, where etcd 3.4 is installed, the same requests to etcd started with the same flags:
// --auth-token-ttl, --bcrypt-cost, --strict-reconfig-check, --pre-vote,
// --initial-election-tick-advance and --experimental-watch-progress-notify-interval.
import assert from "node:assert/strict";
import { request } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { Etcd3 } from "etcd3";
import { startCluster } from "../helpers/cluster.ts";
import { until } from "../helpers/http.ts";
import { etcdctl, installed, startGrpcServer, waitGrpcReady, type GrpcTestServer } from "../helpers/grpc.ts";
import { freePort, kvctlBin, repoRoot } from "../helpers/server.ts";
import { spawnServer, type Spawned } from "../helpers/spawned.ts";

const haveEtcd = installed("etcd") && installed("etcdctl");
const b64 = (s: string): string => Buffer.from(s).toString("base64");
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function gw(s: GrpcTestServer, path: string, body: unknown, token?: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${s.url}/v3/${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json", ...(token === undefined ? {} : { authorization: token }) } });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text.split("\n")[0] ?? "{}") as Record<string, unknown> };
}

/** kvctl, and etcd 3.4 beside it when installed, each a one-member cluster with `flags`. */
async function both(flags: string[]): Promise<GrpcTestServer[]> {
  const kinds: Array<"kvctl" | "etcd"> = haveEtcd ? ["kvctl", "etcd"] : ["kvctl"];
  const servers = await Promise.all(kinds.map((k) => startGrpcServer(k, flags)));
  after(() => Promise.all(servers.map((s) => s.stop())));
  await Promise.all(servers.map((s) => waitGrpcReady(s)));
  return servers;
}

/** The --auth-token-ttl below, in seconds. */
const TOKEN_TTL_S = 2;
/** etcd drops idle tokens once a second (simpleTokenTTLResolution); kvctl at their next use. */
const ETCD_TOKEN_SWEEP_MS = 1000;

describe("--auth-token-ttl", () => {
  test("a simple token idle longer than the TTL is refused; each use renews it (kvctl and etcd alike)", async () => {
    const servers = await both(["--auth-token-ttl", String(TOKEN_TTL_S)]);
    await Promise.all(
      servers.map(async (s) => {
        for (const [path, body] of [["auth/user/add", { name: "root", password: "pw" }], ["auth/user/grant", { user: "root", role: "root" }], ["auth/enable", {}]] as const) {
          assert.equal((await gw(s, path, body)).status, 200, `${s.kind} ${path}`);
        }
        const login = await gw(s, "auth/authenticate", { name: "root", password: "pw" });
        const token = login.json["token"] as string;
        const put = (): Promise<{ status: number; json: Record<string, unknown> }> => gw(s, "kv/put", { key: b64("ttl/k"), value: b64("v") }, token);
        assert.equal((await put()).status, 200, s.kind);
        // Nothing to wait for while a token lives: used three times, each 0.6 TTL after the
        // last (1.2 s), for 1.8 TTL (3.6 s): longer than an unrenewed token lives on either
        // server (TTL + etcd's sweep, 3 s), and never idle for a whole TTL.
        for (let i = 0; i < 3; i++) {
          await sleep(TOKEN_TTL_S * 600);
          assert.equal((await put()).status, 200, `${s.kind}: renewed by use (${i})`);
        }
        // Then idle. No event shows a token's end (etcd drops it silently at its next sweep
        // after the TTL, kvctl at its next use), and a use to look would renew it: one use
        // after the TTL, a sweep and half a second more (3.5 s) must be refused on both.
        await sleep(TOKEN_TTL_S * 1000 + ETCD_TOKEN_SWEEP_MS + 500);
        const late = await put();
        assert.equal(late.status, 401, `${s.kind}: ${JSON.stringify(late.json)}`);
        assert.equal(late.json["message"], "etcdserver: invalid auth token", s.kind);
      }),
    );
  });
});

/** The bytes of a v3 backup served by the gateway (each line's base64 blob, joined). */
async function backupBytes(s: GrpcTestServer): Promise<Buffer> {
  const res = await fetch(`${s.url}/v3/maintenance/snapshot`, { method: "POST", body: "{}" });
  const parts: Buffer[] = [];
  for (const line of (await res.text()).split("\n")) {
    if (line.trim() === "") continue;
    const blob = (JSON.parse(line) as { result?: { blob?: string } }).result?.blob;
    if (blob !== undefined) parts.push(Buffer.from(blob, "base64"));
  }
  return Buffer.concat(parts);
}

describe("--bcrypt-cost", () => {
  test("sets the work of new v3 password hashes; an invalid cost falls back to 10 with etcd's warning", async () => {
    const [cheap, bad] = await Promise.all([startGrpcServer("kvctl", ["--bcrypt-cost", "4"]), startGrpcServer("kvctl", ["--bcrypt-cost", "3"])]);
    after(() => Promise.all([cheap.stop(), bad.stop()]));
    await Promise.all([waitGrpcReady(cheap), waitGrpcReady(bad)]);
    for (const s of [cheap, bad]) {
      assert.equal((await gw(s, "auth/user/add", { name: "u", password: "pw" })).status, 200);
      assert.equal((await gw(s, "auth/user/add", { name: "root", password: "pw" })).status, 200);
      assert.equal((await gw(s, "auth/user/grant", { user: "root", role: "root" })).status, 200);
    }
    // The backup holds the stored hashes: bcrypt's, as etcd's, which name their cost.
    assert.match((await backupBytes(cheap)).toString("latin1"), /\$2a\$04\$[./A-Za-z0-9]{53}/, "cost 4");
    assert.match((await backupBytes(bad)).toString("latin1"), /\$2a\$10\$[./A-Za-z0-9]{53}/, "cost 3 is invalid: cost 10");
    for (const s of [cheap, bad]) {
      assert.equal((await gw(s, "auth/enable", {})).status, 200);
      assert.equal((await gw(s, "auth/authenticate", { name: "u", password: "pw" })).status, 200, "the hash verifies");
      assert.notEqual((await gw(s, "auth/authenticate", { name: "u", password: "pW" })).status, 200, "and refuses a wrong password");
    }
    assert.match(bad.logs(), /use default bcrypt cost instead of the invalid given cost/);
  });
});

/** A v2 members request; the body as text. */
async function members(s: GrpcTestServer, method: string, path = "", body?: unknown): Promise<{ status: number; text: string; clusterHeader: boolean }> {
  const res = await fetch(`${s.url}/v2/members${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }) });
  return { status: res.status, text: await res.text(), clusterHeader: res.headers.has("x-etcd-cluster-id") };
}

// The three cases at once: each has servers of its own, and none measures time (the third
// waits for links to age 5 s and for a write, the second for a change to stay pending).
describe("--strict-reconfig-check", { concurrency: true }, () => {
  test("a third voter while the second never started, or removing the only started one, is refused as etcd refuses it", async () => {
    const servers = await both(["--enable-v2"]);
    const seen = await Promise.all(
      servers.map(async (s) => {
        const base = Number(s.url.split(":")[2]);
        const peer = (n: number): string => `http://127.0.0.1:${base + 500 + n}`;
        const out: unknown[] = [];
        const first = await members(s, "POST", "", { peerURLs: [peer(1)] });
        out.push(first.status);
        const second = await members(s, "POST", "", { peerURLs: [peer(2)] });
        out.push(second.status, second.text, second.clusterHeader);
        const v3 = await gw(s, "cluster/member/add", { peerURLs: [peer(3)] });
        out.push(v3.status, v3.json);
        const ctl = await etcdctl(s.endpoint, ["member", "add", "x", `--peer-urls=${peer(4)}`]);
        out.push(ctl.code, ctl.stderr.split("\n").find((l) => l.startsWith("Error:")));
        const list = JSON.parse((await members(s, "GET")).text) as { members: Array<{ id: string; name: string }> };
        const self = list.members.find((m) => m.name !== "")!;
        const unstarted = list.members.find((m) => m.name === "")!;
        const delSelf = await members(s, "DELETE", `/${self.id}`);
        out.push(delSelf.status, delSelf.text);
        const v3Remove = await gw(s, "cluster/member/remove", { ID: BigInt(`0x${self.id}`).toString() });
        out.push(v3Remove.status, v3Remove.json);
        // (Removing the one that never started passes the check, but cannot commit: 1 of 2 voters up.)
        void unstarted;
        return out;
      }),
    );
    const notEnough = "etcdserver: re-configuration failed due to not enough started members";
    const v3Refusal = { error: notEnough, message: notEnough, code: 2 };
    const v2Refusal = '{"message":"Internal Server Error"}';
    assert.deepEqual(seen[0], [201, 500, v2Refusal, true, 500, v3Refusal, 1, `Error: ${notEnough}`, 500, v2Refusal, 500, v3Refusal]);
    if (seen[1] !== undefined) assert.deepEqual(seen[1], seen[0], "etcd answers the same");
  });

  test("--strict-reconfig-check=false proposes the change instead of refusing it", async () => {
    const [s] = await Promise.all([startGrpcServer("kvctl", ["--strict-reconfig-check=false"])]);
    after(() => s!.stop());
    await waitGrpcReady(s!);
    const base = Number(s!.url.split(":")[2]);
    assert.equal((await members(s!, "POST", "", { peerURLs: [`http://127.0.0.1:${base + 601}`] })).status, 201);
    // Two voters, one up: the next change cannot commit, so it is still waiting (not refused) 1.5 s on.
    const pending = fetch(`${s!.url}/v2/members`, { method: "POST", body: JSON.stringify({ peerURLs: [`http://127.0.0.1:${base + 602}`] }), headers: { "content-type": "application/json" }, signal: AbortSignal.timeout(1500) });
    await assert.rejects(pending, (err: unknown) => err instanceof Error && err.name === "TimeoutError");
    assert.doesNotMatch(s!.logs(), /rejecting member change/);
  });

  test("in a 3-member cluster with one member down, a member add is refused as unhealthy; a down member may be removed", { timeout: 120_000 }, async () => {
    const cluster = await startCluster(3, ["--heartbeat-interval", "50", "--election-timeout", "500"]);
    after(() => cluster.stop());
    const [m0, m1, m2] = cluster.members;
    // Links younger than 5 s refuse any add too (etcd's HealthInterval), with the same
    // answer: wait until m0's have aged, so that the refusal below is for m2's death. m0
    // shows it by answering an add of a peer URL m1 already has with 409 (taken), not 500.
    await until(async () => {
      const r = await fetch(`${m0!.clientUrl}/v2/members`, { method: "POST", body: JSON.stringify({ peerURLs: [m1!.peerUrl] }), headers: { "content-type": "application/json" } });
      await r.arrayBuffer();
      assert.ok(r.status === 409 || r.status === 500, `an add of a taken peer URL: ${r.status}`);
      return r.status === 409;
    }, 15_000, "m0's links to every member up for 5 s");
    await cluster.kill(m2!, "SIGKILL");
    // If m2 led, a new leader must first commit an entry of its term: until then Raft drops
    // a conf change (etcd's too: "pending unapplied configuration") and the removal below
    // would wait out its request timeout. A write through m0 that succeeds proves it.
    await until(async () => {
      const r = await fetch(`${m0!.clientUrl}/v2/keys/settled`, { method: "PUT", body: new URLSearchParams({ value: "1" }) }).catch(() => undefined);
      return r?.status === 200 || r?.status === 201;
    }, 10_000, "a write after m2's death");
    const spare = await cluster.spare("m3");
    const v2 = await fetch(`${m0!.clientUrl}/v2/members`, { method: "POST", body: JSON.stringify({ peerURLs: [spare.peerUrl] }), headers: { "content-type": "application/json" } });
    assert.equal(v2.status, 500);
    assert.equal(await v2.text(), '{"message":"Internal Server Error"}');
    const v3 = await fetch(`${m0!.clientUrl}/v3/cluster/member/add`, { method: "POST", body: JSON.stringify({ peerURLs: [spare.peerUrl] }) });
    assert.equal(v3.status, 503);
    assert.deepEqual(await v3.json(), { error: "etcdserver: unhealthy cluster", message: "etcdserver: unhealthy cluster", code: 14 });
    const list = (await (await fetch(`${m0!.clientUrl}/v2/members`)).json()) as { members: Array<{ id: string; name: string }> };
    const downId = list.members.find((m) => m.name === "m2")!.id;
    const del = await fetch(`${m0!.clientUrl}/v2/members/${downId}`, { method: "DELETE" });
    assert.equal(del.status, 204, `the member that is down is no part of the active quorum: ${await del.text()}`);
  });
});

/**
 * Reads `{"result":...}` lines of a /v3/watch stream while `during` runs, then until
 * `enough(lines)` or `deadlineMs` (the lines so far then, for the caller's assertion).
 */
function watchLines(url: string, requests: unknown[], enough: (lines: Array<Record<string, unknown>>) => boolean, during: () => Promise<void> = async () => {}, deadlineMs = 10_000): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const lines: Array<Record<string, unknown>> = [];
    let duringDone = false;
    let deadline: ReturnType<typeof setTimeout> | undefined;
    const finish = (): void => {
      clearTimeout(deadline);
      req.destroy();
      resolve(lines);
    };
    const req = request(`${url}/v3/watch`, { method: "POST" }, (res) => {
      let buf = "";
      res.on("data", (c: Buffer) => {
        buf += c.toString();
        let nl: number;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line !== "") lines.push((JSON.parse(line) as { result: Record<string, unknown> }).result);
        }
        if (duringDone && enough(lines)) finish();
      });
      res.on("error", () => undefined);
      void during().then(() => {
        duringDone = true;
        if (enough(lines)) finish();
        else deadline = setTimeout(finish, deadlineMs);
      }, reject);
    });
    req.on("error", () => undefined);
    req.end(requests.map((r) => JSON.stringify(r)).join("\n"));
  });
}

describe("--experimental-watch-progress-notify-interval", () => {
  test("watchers created with progress_notify get empty responses at the current revision each interval, none while events flow", { timeout: 60_000 }, async () => {
    // An interval ten times the puts' spacing below: only a stall of a whole second between
    // two puts (seen with 300 ms on a loaded machine) would let a notification in.
    const intervalMs = 1000;
    const servers = await both(["--experimental-watch-progress-notify-interval", `${intervalMs}ms`]);
    await Promise.all(
      servers.map(async (s) => {
        const res = await gw(s, "kv/put", { key: b64("p/x"), value: b64("1") });
        const rev = Number((res.json["header"] as { revision: string }).revision);
        const creates = [
          { create_request: { key: b64("p/a"), progress_notify: true, watch_id: 1 } },
          { create_request: { key: b64("p/b"), watch_id: 2 } },
        ];
        const isProgress = (r: Record<string, unknown>): boolean => r["created"] !== true && r["events"] === undefined;
        // Until three notifications (10 s at most): three intervals in which the other watcher got none.
        const quiet = await watchLines(s.url, creates, (lines) => lines.filter(isProgress).length >= 3);
        const progress = quiet.filter(isProgress);
        assert.ok(progress.length >= 3, `${s.kind}: ${JSON.stringify(quiet)}`);
        for (const p of progress) {
          assert.equal(p["watch_id"], "1", `${s.kind}: only the watcher that asked`);
          assert.equal(Number((p["header"] as { revision: string }).revision), rev, s.kind);
        }
        // Puts to p/a every tenth of the interval: each tick finds events sent since the last
        // one and is skipped. The spacing is the point (events must keep flowing across ticks
        // of the server's clock), so it is real time. Read until the 12th event.
        const eventsIn = (lines: Array<Record<string, unknown>>): number => lines.reduce((n, r) => n + ((r["events"] as unknown[] | undefined)?.length ?? 0), 0);
        const busy = await watchLines(s.url, creates.slice(0, 1), (lines) => eventsIn(lines) >= 12, async () => {
          for (let i = 0; i < 12; i++) {
            await gw(s, "kv/put", { key: b64("p/a"), value: b64(String(i)) });
            await sleep(intervalMs / 10);
          }
        });
        const events = busy.filter((r) => r["events"] !== undefined);
        assert.ok(events.length >= 10, `${s.kind}: ${JSON.stringify(busy)}`);
        const firstEvent = busy.indexOf(events[0]!);
        const lastEvent = busy.indexOf(events.at(-1)!);
        const between = busy.slice(firstEvent, lastEvent).filter((r) => r["events"] === undefined && r["created"] !== true);
        assert.deepEqual(between, [], `${s.kind}: no progress notification while events flow`);
      }),
    );
  });

  test("over gRPC the same: WatchResponses without events, header revision = current", async () => {
    const s = await startGrpcServer("kvctl", ["--experimental-watch-progress-notify-interval", "200ms"]);
    after(() => s.stop());
    await waitGrpcReady(s);
    const client = new Etcd3({ hosts: s.url });
    after(() => client.close());
    await client.put("g/k").value("v");
    const rev = Number((await client.get("g/k").exec()).header.revision);
    const stream = await client.watchClient.watch();
    const got: Array<{ events: unknown[]; revision: number; created: boolean }> = [];
    stream.on("data", (r: { events: unknown[]; header: { revision: string }; created: boolean }) => got.push({ events: r.events, revision: Number(r.header.revision), created: r.created }));
    stream.write({ create_request: { key: Buffer.from("g/"), range_end: Buffer.from("g0"), progress_notify: true } });
    const progress = (): typeof got => got.filter((r) => !r.created);
    await until(() => progress().length >= 3, 5000, "three progress notifications");
    stream.end();
    for (const p of progress()) assert.deepEqual([p.events.length, p.revision], [0, rev]);
  });
});

/** One member of a three-member cluster whose two peers never start: it can only campaign. */
async function lonely(kind: "kvctl" | "etcd", flags: string[]): Promise<{ url: string; proc: Spawned; dir: string }> {
  const [client, ...peers] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const dir = mkdtempSync(join(tmpdir(), "kvctl-prevote-"));
  const url = `http://127.0.0.1:${client}`;
  const args = [
    "--name", "a", "--data-dir", join(dir, "a"), "--listen-client-urls", url, "--advertise-client-urls", url,
    "--listen-peer-urls", `http://127.0.0.1:${peers[0]}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${peers[0]}`,
    "--initial-cluster", `a=http://127.0.0.1:${peers[0]},b=http://127.0.0.1:${peers[1]},c=http://127.0.0.1:${peers[2]}`,
    "--heartbeat-interval", "100", "--election-timeout", "500", "--enable-v2", ...flags,
  ];
  const proc = kind === "etcd" ? spawnServer("etcd", args, dir) : spawnServer(process.execPath, [kvctlBin, "serve", ...args], repoRoot);
  return { url, proc, dir };
}

/**
 * The highest term Raft's log lines name ("became candidate at term 3"; etcd's and kvctl's
 * Raft say the same). A member without a quorum serves no client (etcd waits to be ready):
 * the log is what both show.
 */
function highestTerm(log: string): number {
  let max = 0;
  for (const m of log.matchAll(/became (?:pre-)?candidate at term (\d+)/g)) max = Math.max(max, Number(m[1]));
  return max;
}

describe("--pre-vote", () => {
  test("without pre-vote a member that cannot win raises its term at every election timeout; with it (kvctl's default) the term stays", { timeout: 60_000 }, async () => {
    const kinds: Array<"kvctl" | "etcd"> = haveEtcd ? ["kvctl", "etcd"] : ["kvctl"];
    const runs = await Promise.all(kinds.flatMap((k) => [lonely(k, ["--pre-vote=false"]), lonely(k, ["--pre-vote=true"]), ...(k === "kvctl" ? [lonely(k, [])] : [])]));
    after(async () => {
      await Promise.all(runs.map((r) => r.proc.stop()));
      for (const r of runs) rmSync(r.dir, { recursive: true, force: true });
    });
    // Until those without pre-vote have campaigned 3 times (term 4): as many chances for the
    // others to raise theirs.
    const withoutPreVote = kinds.map((_, i) => runs[i === 0 ? 0 : 3]!);
    const campaigned = (): boolean => runs.every((r) => highestTerm(r.proc.log()) >= 1) && withoutPreVote.every((r) => highestTerm(r.proc.log()) >= 4);
    await until(campaigned, 20_000, "every member to campaign, those without pre-vote 3 times");
    const terms = runs.map((r) => highestTerm(r.proc.log()));
    assert.ok(terms.every((t) => t >= 1), `every member campaigned: ${terms.join(",")}`);
    const [kvOff, kvOn, kvDefault, etcdOff, etcdOn] = terms;
    assert.ok(kvOff! >= 3, `kvctl --pre-vote=false: term ${kvOff}`);
    assert.ok(kvOn! <= 1, `kvctl --pre-vote=true: term ${kvOn}`);
    assert.ok(kvDefault! <= 1, `kvctl's default is pre-vote: term ${kvDefault}`);
    if (etcdOff !== undefined) {
      assert.ok(etcdOff >= 3, `etcd --pre-vote=false: term ${etcdOff}`);
      assert.ok(etcdOn! <= 1, `etcd --pre-vote=true: term ${etcdOn}`);
    }
  });
});

/** A member's JSON log lines, parsed (its other output skipped). */
function logLines(m: { log: string[] }): Array<{ ts: number; msg: string }> {
  return m.log.join("").split("\n").filter((l) => l.startsWith("{")).map((l) => {
    const j = JSON.parse(l) as { ts: string; msg: string };
    return { ts: Date.parse(j.ts), msg: j.msg };
  });
}

/** The time (ms since the epoch) of a member's first log line matching `re`. */
function firstAt(m: { log: string[] }, re: RegExp): number | undefined {
  return logLines(m).find((l) => re.test(l.msg))?.ts;
}

const SERVING_PEERS = /^serving peer traffic$/;
const BECAME_LEADER = / became leader at term /;
const CAMPAIGNS = / is starting a new election at term /;

describe("--initial-election-tick-advance", () => {
  test("false: a new cluster's first election waits a whole election timeout; true: well before it", { timeout: 120_000 }, async (t) => {
    const electionMs = 2000;
    const flags = ["--heartbeat-interval", "100", "--election-timeout", String(electionMs)];
    const [fast, slow] = await Promise.all([startCluster(3, flags), startCluster(3, [...flags, "--initial-election-tick-advance=false"])]);
    after(() => Promise.all([fast.stop(), slow.stop()]));
    type Member = (typeof fast)["members"][number];
    const at = (m: Member, re: RegExp, what: string): number => {
      const ts = firstAt(m, re);
      assert.ok(ts !== undefined, `${m.name}: ${what}`);
      return ts;
    };
    const timeline = (ms: Member[]): string =>
      ms.map((m) => `${m.name}: first line ${firstAt(m, /./)}, serving peers ${firstAt(m, SERVING_PEERS)}, campaigned ${firstAt(m, CAMPAIGNS) ?? "-"}, led ${firstAt(m, BECAME_LEADER) ?? "-"}`).join("; ");
    t.diagnostic(`with the advance: ${timeline(fast.members)}`);
    t.diagnostic(`without: ${timeline(slow.members)}`);

    // A member logs "serving peer traffic" right after its raft clock started ticking
    // (KvServer.start(), then the peer listener). Two of three (a quorum) can talk once the
    // second of them serves its peers; as in etcd, the advance applies from then. The first
    // campaign is counted from there, so a slow process start on a loaded machine does not
    // count, nor a split vote after it (rare since the others hold back for the lowest id
    // and advance to a mark rather than by a count, first-election.ts, but a member whose
    // clock ran out on its own can still meet the lowest id's campaign).
    const serving = fast.members.map((m) => at(m, SERVING_PEERS, "served its peers")).sort((a, b) => a - b);
    const quorumTalks = serving[1]!;
    const firstCampaign = Math.min(...fast.members.map((m) => firstAt(m, CAMPAIGNS) ?? Infinity));
    assert.ok(firstCampaign - quorumTalks < electionMs, `with the tick advance the first campaign began ${firstCampaign - quorumTalks} ms after a quorum served its peers`);
    assert.equal(fast.members.filter((m) => firstAt(m, BECAME_LEADER) !== undefined).length, 1, "one leader");

    // Without it, a member's clock runs a whole election timeout of ticks (each at least a
    // heartbeat interval of wall time) before it campaigns, however early its peers were up:
    // counted from the first campaigner's first log line, before its clock started.
    const campaigns = slow.members.flatMap((m) => {
      const c = firstAt(m, CAMPAIGNS);
      return c === undefined ? [] : [{ m, c }];
    });
    const first = campaigns.sort((a, b) => a.c - b.c)[0];
    assert.ok(first !== undefined, "a member campaigned");
    const waited = first.c - at(first.m, /./, "logged");
    assert.ok(waited >= electionMs, `without it, ${first.m.name} campaigned ${waited} ms after it started: at least the 2 s election timeout`);
    assert.equal(slow.members.filter((m) => firstAt(m, BECAME_LEADER) !== undefined).length, 1, "one leader");
    assert.ok(slow.members.every((m) => m.log.join("").includes("skipping initial election tick advance")));
  });

  test("the lowest id's log behind: its early campaign is refused, and the others, held back while it answers, still elect", { timeout: 120_000 }, async (t) => {
    const electionMs = 1000;
    const c = await startCluster(3, ["--heartbeat-interval", "100", "--election-timeout", String(electionMs)]);
    after(() => c.stop());
    const members = (await (await fetch(`${c.members[0]!.clientUrl}/v2/members`)).json()) as { members: Array<{ id: string; name: string }> };
    const lowestName = [...members.members].sort((a, b) => (BigInt(`0x${a.id}`) < BigInt(`0x${b.id}`) ? -1 : 1))[0]!.name;
    const lowest = c.members.find((m) => m.name === lowestName)!;
    const others = c.members.filter((m) => m !== lowest);
    // The lowest id misses a write, then the whole cluster goes down and starts again together.
    await c.kill(lowest, "SIGKILL");
    await until(async () => (await fetch(`${others[0]!.clientUrl}/v2/keys/behind`, { method: "PUT", body: new URLSearchParams({ value: "x" }) })).status === 201, 10_000, "a write without the lowest id");
    await Promise.all(others.map((m) => c.kill(m, "SIGKILL")));
    for (const m of c.members) m.log.length = 0;
    for (const m of c.members) await c.start(m);
    await until(async () => c.members.some((m) => firstAt(m, BECAME_LEADER) !== undefined), 20_000, "a leader");
    t.diagnostic(c.members.map((m) => `${m.name}${m === lowest ? " (lowest id)" : ""}: serving peers ${firstAt(m, SERVING_PEERS)}, early campaign ${firstAt(m, /^lowest member id/) ?? "-"}, campaigned ${firstAt(m, CAMPAIGNS) ?? "-"}, led ${firstAt(m, BECAME_LEADER) ?? "-"}`).join("; "));
    assert.equal(firstAt(lowest, BECAME_LEADER), undefined, "a member whose log is behind cannot win");
    // The two others alone are a quorum. Held back to half a timeout while the lowest id
    // answers, each still campaigns once its randomized timeout runs out: 1-2 election
    // timeouts of ticks from its clock's start, which comes before it serves its peers; a
    // third for ticks late on a loaded machine and the pre-vote and vote rounds. A first
    // election that held a clock back, or kept a member from campaigning, would fail this.
    const quorumTalks = Math.max(...others.map((m) => firstAt(m, SERVING_PEERS) ?? Infinity));
    const led = Math.min(...others.map((m) => firstAt(m, BECAME_LEADER) ?? Infinity));
    assert.ok(led - quorumTalks < 3 * electionMs, `leader ${led - quorumTalks} ms after the two up-to-date members served their peers`);
  });
});
