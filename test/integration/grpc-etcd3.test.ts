// The `etcd3` npm package (@grpc/grpc-js underneath: another gRPC stack than etcdctl's
// grpc-go, with its own request shapes, metadata and keepalive pings) against
// `kvctl serve`: kv, txns, watches, leases with keepalive, its Lock and Election helpers,
// and auth, over plain TCP and over TLS with client certificates.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { Etcd3, type IOptions } from "etcd3";
import { CertDir } from "../helpers/certs.ts";
import { startGrpcServer, type GrpcTestServer } from "../helpers/grpc.ts";
import { until } from "../helpers/http.ts";

function suite(name: string, start: () => Promise<{ server: GrpcTestServer; options: IOptions; cleanup?: () => void }>): void {
  describe(`etcd3 client against kvctl: ${name}`, () => {
    let server: GrpcTestServer;
    let options: IOptions;
    let client: Etcd3;
    let cleanup: (() => void) | undefined;

    before(async () => {
      ({ server, options, cleanup } = await start());
      client = new Etcd3(options);
      await until(() => client.put("ready").value("1").then(() => true, () => false), 20_000, "server ready");
    });
    after(async () => {
      client?.close();
      await server?.stop();
      cleanup?.();
    });

    test("kv: put/get/delete, prefix ranges, count, previous values", async () => {
      await client.put("kv/a").value("1");
      await client.put("kv/b").value("2");
      await client.put("kv/c").value(Buffer.from([0, 255, 1]));
      assert.equal(await client.get("kv/a").string(), "1");
      assert.deepEqual(await client.get("kv/c").buffer(), Buffer.from([0, 255, 1]));
      assert.equal(await client.get("kv/none").string(), null);
      assert.deepEqual(await client.getAll().prefix("kv/").strings(), { "kv/a": "1", "kv/b": "2", "kv/c": "\u0000\ufffd\u0001" });
      assert.deepEqual(await client.getAll().prefix("kv/").keys(), ["kv/a", "kv/b", "kv/c"]);
      assert.equal(await client.getAll().prefix("kv/").count(), 3);
      assert.deepEqual(await client.getAll().inRange({ start: "kv/a", end: "kv/c" }).keys(), ["kv/a", "kv/b"]);
      assert.deepEqual(await client.getAll().prefix("kv/").sort("Key", "Descend").limit(2).keys(), ["kv/c", "kv/b"]);
      const prev = await client.put("kv/a").value("1b").getPrevious();
      assert.equal(prev?.value.toString(), "1");
      const del = await client.delete().key("kv/a").getPrevious();
      assert.equal(del[0]?.value.toString(), "1b");
      const res = await client.delete().prefix("kv/").exec();
      assert.equal(res.deleted, "2");
      assert.equal(await client.getAll().prefix("kv/").count(), 0);
    });

    test("txns: if/then/else", async () => {
      await client.put("txn/k").value("a");
      const yes = await client.if("txn/k", "Value", "==", "a").then(client.put("txn/k").value("b"), client.get("txn/k")).else(client.put("txn/other").value("x")).commit();
      assert.equal(yes.succeeded, true);
      assert.equal(yes.responses.length, 2);
      // The ops of a txn run in order: its get sees its put.
      assert.equal(yes.responses[1]?.response_range?.kvs[0]?.value.toString(), "b");
      const no = await client.if("txn/k", "Value", "==", "a").then(client.put("txn/k").value("c")).else(client.get("txn/k")).commit();
      assert.equal(no.succeeded, false);
      assert.equal(no.responses[0]?.response_range?.kvs[0]?.value.toString(), "b");
      const v = await client.if("txn/k", "Version", ">", 1).and("txn/missing", "Create", "==", 0).then(client.delete().key("txn/k")).commit();
      assert.equal(v.succeeded, true);
      assert.equal(await client.get("txn/k").string(), null);
    });

    test("watches: a prefix watcher sees puts and deletes", async () => {
      const watcher = await client.watch().prefix("w/").create();
      const seen: string[] = [];
      watcher.on("put", (kv) => seen.push(`put ${kv.key.toString()}=${kv.value.toString()}`));
      watcher.on("delete", (kv) => seen.push(`delete ${kv.key.toString()}`));
      await client.put("w/1").value("one");
      await client.put("other").value("x");
      await client.put("w/2").value("two");
      await client.delete().key("w/1");
      await until(() => seen.length >= 3, 5_000, "3 events");
      assert.deepEqual(seen, ["put w/1=one", "put w/2=two", "delete w/1"]);
      await watcher.cancel();
    });

    test("leases: keepalive keeps the key; revoke removes it", async () => {
      const TTL_S = 2;
      const lease = client.lease(TTL_S, { autoKeepAlive: true });
      let kept = 0;
      lease.on("keepaliveSucceeded", () => kept++);
      await lease.put("lease/k").value("v");
      const id = await lease.grant();
      const granted = Date.now();
      assert.match(id, /^[0-9]+$/); // etcd3 gives int64s as decimal strings
      // Nothing to wait for while a lease lives: past its TTL (and the leader's 100 ms expiry
      // check) it would be expired unless renewed, and the keepalive below would find it
      // gone (a lease past its deadline is not renewed) even before its revocation applied.
      await until(() => kept >= 1 && Date.now() - granted >= TTL_S * 1000 + 100, 10_000, "a keepalive answered, and the TTL over");
      assert.equal(await client.get("lease/k").string(), "v");
      const once = await lease.keepaliveOnce();
      assert.equal(once.TTL, String(TTL_S));
      assert.equal(once.ID, id);
      await lease.revoke();
      assert.equal(await client.get("lease/k").string(), null);
    });

    test("locks: one holder at a time", async () => {
      // etcd3's Lock is a try-lock: a txn creating the key only if it does not exist.
      const a = client.lock("locks/x").ttl(5);
      await a.acquire();
      const b = client.lock("locks/x").ttl(5);
      await assert.rejects(b.acquire(), /Failed to acquire a lock on locks\/x/);
      await a.release();
      await b.acquire();
      assert.equal(await client.getAll().prefix("locks/x").count(), 1);
      await b.release();
      assert.equal(await client.getAll().prefix("locks/x").count(), 0);
      assert.equal(await client.lock("locks/y").do(async () => "ran"), "ran");
    });

    test("elections: a leader, observed, then the next candidate", async () => {
      const election = client.election("elect", 5);
      const first = election.campaign("alice");
      await new Promise<void>((resolve, reject) => {
        first.on("elected", () => resolve());
        first.on("error", reject);
      });
      assert.equal(await election.leader(), "alice");
      const observer = await election.observe();
      const leaders: string[] = [];
      observer.on("change", (l: string | undefined) => leaders.push(String(l)));
      const second = client.election("elect", 5).campaign("bob");
      let bobElected = false;
      second.on("elected", () => (bobElected = true));
      // etcd3 emits "_isWaiting" (its own tests' sync point) once the campaign found an older
      // key and waits for its deletion: the decision not to lead, taken from the server's answer.
      const decided = await new Promise<string>((resolve, reject) => {
        second.once("_isWaiting", () => resolve("waiting"));
        second.once("elected", () => resolve("elected"));
        second.once("error", reject);
      });
      assert.equal(decided, "waiting");
      assert.equal(bobElected, false);
      await first.resign();
      await until(() => bobElected, 5_000, "bob elected");
      assert.equal(await election.leader(), "bob");
      await until(() => leaders.includes("bob"), 5_000, "observer saw bob");
      await second.resign();
      await observer.cancel();
    });

    test("auth: users, roles, permissions and tokens", async () => {
      const root = await client.user("root").create("rootpw");
      await root.addRole("root");
      const reader = await client.role("reader").create();
      await reader.grant({ permission: "Read", range: client.range({ prefix: "pub/" }) });
      const alice = await client.user("alice").create("alicepw");
      await alice.addRole("reader");
      // As etcd: the root role can be granted without being created, and is not listed.
      assert.deepEqual((await client.getRoles()).map((r) => r.name).sort(), ["reader"]);
      await client.put("pub/x").value("1");
      await client.auth.authEnable({});
      const asAlice = new Etcd3({ ...options, auth: { username: "alice", password: "alicepw" } });
      const asRoot = new Etcd3({ ...options, auth: { username: "root", password: "rootpw" } });
      const wrong = new Etcd3({ ...options, auth: { username: "alice", password: "nope" } });
      try {
        assert.equal(await asAlice.get("pub/x").string(), "1");
        await assert.rejects(asAlice.put("pub/x").value("2").exec(), /permission denied/);
        await assert.rejects(asAlice.get("secret").string(), /permission denied/);
        await assert.rejects(wrong.get("pub/x").string(), /authentication failed/);
        assert.deepEqual((await asRoot.getUsers()).map((u) => u.name).sort(), ["alice", "root"]);
        await asRoot.put("pub/x").value("3");
        assert.equal(await asAlice.get("pub/x").string(), "3");
        await asRoot.auth.authDisable({});
      } finally {
        asAlice.close();
        asRoot.close();
        wrong.close();
      }
      await client.user("alice").delete();
      await client.role("reader").delete();
      await client.user("root").delete();
    });
  });
}

suite("plain TCP", async () => {
  const server = await startGrpcServer("kvctl");
  return { server, options: { hosts: server.url } };
});

suite("TLS with client certificates", async () => {
  const certs = new CertDir("kvctl-grpc-etcd3-");
  const serverCert = certs.server();
  const clientCert = certs.client("client");
  const server = await startGrpcServer("kvctl", ["--cert-file", serverCert.cert, "--key-file", serverCert.key, "--trusted-ca-file", certs.ca.cert, "--client-cert-auth"], "https");
  return {
    server,
    options: {
      hosts: server.url,
      credentials: { rootCertificate: readFileSync(certs.ca.cert), privateKey: readFileSync(clientCert.key), certChain: readFileSync(clientCert.cert) },
    },
    cleanup: () => certs.remove(),
  };
});
