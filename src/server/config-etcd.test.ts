// Etcd 3.4's other flags, its YAML configuration file and its ETCD_ variables.
import { test, after } from "node:test";
import { generateKeyPairSync } from "node:crypto";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, autoCompaction, parseAuthToken, parseCors, parseServeArgs, serveFlags, type ServerConfig } from "./config.ts";
import { parseConfigYaml } from "./config-file.ts";
import { parseGoDuration } from "./go-duration.ts";

const dir = mkdtempSync(join(tmpdir(), "kvctl-config-"));
after(() => rmSync(dir, { recursive: true, force: true }));

async function parse(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServerConfig> {
  const c = await parseServeArgs(args, env, () => undefined);
  assert.ok(c);
  return c;
}
const refuses = (args: string[], re: RegExp, env: NodeJS.ProcessEnv = {}): Promise<void> =>
  assert.rejects(parseServeArgs(args, env, () => undefined), (err: unknown) => err instanceof ConfigError && re.test(err.message));

test("--experimental-watch-progress-notify-interval: below 100ms is raised to it with etcd's warning; 0 keeps 10m", async () => {
  // etcd 3.4's v3rpc sets its interval only for a value > 0: 0 or less leaves the 10 minutes.
  assert.equal((await parse(["--experimental-watch-progress-notify-interval", "0"])).watchProgressNotifyIntervalMs, 600_000);
  assert.equal((await parse(["--experimental-watch-progress-notify-interval", "250ms"])).watchProgressNotifyIntervalMs, 250);
  const low = await parse(["--experimental-watch-progress-notify-interval", "10ms"]);
  assert.equal(low.watchProgressNotifyIntervalMs, 100);
  assert.ok(low.notices.some((n) => n.level === "warn" && n.msg === "adjusting watch progress notify interval to minimum period"));
  assert.equal((await parse(["--experimental-watch-progress-notify-interval=-1s"])).watchProgressNotifyIntervalMs, 600_000);
});

test("Go durations parse as time.ParseDuration, with its error texts", () => {
  assert.equal(parseGoDuration("10m"), 600_000_000_000n);
  assert.equal(parseGoDuration("1h30m"), 5_400_000_000_000n);
  assert.equal(parseGoDuration("1.5s"), 1_500_000_000n);
  assert.equal(parseGoDuration("-2ms"), -2_000_000n);
  assert.equal(parseGoDuration("0"), 0n);
  assert.equal(parseGoDuration("3µs"), 3_000n);
  assert.throws(() => parseGoDuration("10"), /^GoDurationError: time: missing unit in duration "10"$/);
  assert.throws(() => parseGoDuration("1d"), /time: unknown unit "d" in duration "1d"/);
  assert.throws(() => parseGoDuration(""), /time: invalid duration ""/);
  assert.throws(() => parseGoDuration("m"), /time: invalid duration "m"/);
});

test("the new flags default to etcd's values (kvctl: --enable-v2 true, --logger zap, --pre-vote true)", async () => {
  const c = await parse([]);
  assert.equal(c.enableV2, true);
  assert.equal(c.enableGrpcGateway, true);
  assert.equal(c.walDir, "");
  assert.equal(c.maxWals, 5);
  assert.equal(c.maxSnapshots, 5);
  assert.equal(c.logger, "zap");
  assert.deepEqual(c.logOutputs, ["default"]);
  assert.equal(c.metrics, "basic");
  assert.deepEqual(c.listenMetricsUrls, []);
  assert.deepEqual(c.cors, ["*"]);
  assert.deepEqual(c.authToken, { type: "simple" });
  assert.equal(c.authTokenTtl, 300);
  assert.equal(c.bcryptCost, 10);
  assert.equal(c.quotaBackendBytes, 2147483648);
  assert.deepEqual(c.autoCompaction, { mode: "periodic", retention: 0 });
  assert.equal(c.preVote, true, "kvctl's default, as etcd 3.5's (etcd 3.4: false)");
  assert.equal(c.strictReconfigCheck, true);
  assert.equal(c.initialElectionTickAdvance, true);
  assert.equal(c.watchProgressNotifyIntervalMs, 600_000);
  assert.equal(c.forceNewCluster, false);
  assert.equal(c.maxConcurrentStreams, 4294967295);
  assert.deepEqual(c.grpcKeepAlive, { minTimeMs: 5000, intervalMs: 7_200_000, timeoutMs: 20_000 });
  assert.equal(c.configFile, "");
  assert.deepEqual(c.notices, [], "nothing to log when no etcd-only flag is set");
});

test("every flag of etcd 3.4's --help is in the table", () => {
  // The flags of `etcd --help` (3.4.23), so the table cannot lose one unnoticed; the
  // integration test reads them from a real etcd when one is installed.
  const etcd34 = `name data-dir wal-dir snapshot-count heartbeat-interval election-timeout initial-election-tick-advance
    listen-peer-urls listen-client-urls max-snapshots max-wals quota-backend-bytes backend-batch-interval backend-batch-limit
    max-txn-ops max-request-bytes max-concurrent-streams grpc-keepalive-min-time grpc-keepalive-interval grpc-keepalive-timeout
    initial-advertise-peer-urls initial-cluster initial-cluster-state initial-cluster-token advertise-client-urls discovery
    discovery-fallback discovery-proxy discovery-srv discovery-srv-name strict-reconfig-check pre-vote auto-compaction-retention
    auto-compaction-mode enable-v2 cert-file key-file client-cert-auth client-crl-file client-cert-allowed-hostname trusted-ca-file
    auto-tls peer-cert-file peer-key-file peer-client-cert-auth peer-trusted-ca-file peer-cert-allowed-cn peer-cert-allowed-hostname
    peer-auto-tls peer-crl-file cipher-suites cors host-whitelist auth-token bcrypt-cost auth-token-ttl enable-pprof metrics
    listen-metrics-urls logger log-outputs log-level proxy proxy-failure-wait proxy-refresh-interval proxy-dial-timeout
    proxy-write-timeout proxy-read-timeout experimental-initial-corrupt-check experimental-corrupt-check-time
    experimental-enable-v2v3 experimental-backend-bbolt-freelist-type experimental-enable-lease-checkpoint
    experimental-compaction-batch-limit experimental-peer-skip-client-san-verification experimental-watch-progress-notify-interval
    experimental-warning-apply-duration force-new-cluster debug log-package-levels config-file`.split(/\s+/);
  const names = new Set(serveFlags.map((f) => f.name));
  assert.deepEqual(etcd34.filter((n) => !names.has(n)), []);
});

test("the new flags are parsed into the typed config", async () => {
  const key = join(dir, "jwt.key");
  writeFileSync(key, "secret");
  const c = await parse([
    "--enable-v2=false", "--enable-grpc-gateway=false", "--wal-dir", "/w", "--max-wals", "0", "--max-snapshots=9",
    "--logger", "capnslog", "--log-outputs", "stdout", "--metrics", "extensive", "--listen-metrics-urls", "http://127.0.0.1:9100",
    "--cors", "http://a.example:80,HTTPS://b.example:443", "--auth-token", `jwt,sign-method=HS256,priv-key=${key},ttl=10m`,
    "--auth-token-ttl", "60", "--bcrypt-cost", "12", "--pre-vote=false", "--strict-reconfig-check=false",
    "--initial-election-tick-advance=false", "--experimental-watch-progress-notify-interval", "90s", "--force-new-cluster",
    "--client-crl-file", "/c.crl", "--client-cert-allowed-hostname", "client.example", "--peer-cert-allowed-hostname", "10.0.0.1",
    "--grpc-keepalive-timeout", "0", "--max-concurrent-streams", "100",
  ]);
  assert.equal(c.enableV2, false);
  assert.equal(c.enableGrpcGateway, false);
  assert.equal(c.walDir, "/w");
  assert.equal(c.maxWals, 0);
  assert.equal(c.maxSnapshots, 9);
  assert.equal(c.logger, "capnslog");
  assert.deepEqual(c.logOutputs, ["stdout"]);
  assert.equal(c.metrics, "extensive");
  assert.deepEqual(c.listenMetricsUrls.map((u) => u.href), ["http://127.0.0.1:9100/"]);
  assert.deepEqual(c.cors, ["http://a.example:80", "https://b.example:443"]);
  assert.deepEqual(c.authToken, { type: "jwt", signMethod: "HS256", publicKeyFile: "", privateKeyFile: key, ttlMs: 600_000 });
  assert.equal(c.authTokenTtl, 60);
  assert.equal(c.bcryptCost, 12);
  assert.equal(c.preVote, false);
  assert.equal(c.strictReconfigCheck, false);
  assert.equal(c.initialElectionTickAdvance, false);
  assert.equal(c.watchProgressNotifyIntervalMs, 90_000);
  assert.equal(c.forceNewCluster, true);
  assert.equal(c.clientTls.crlFile, "/c.crl");
  assert.equal(c.clientTls.allowedHostname, "client.example");
  assert.equal(c.peerTls.allowedHostname, "10.0.0.1");
  assert.equal(c.grpcKeepAlive.timeoutMs, 0);
  assert.equal(c.maxConcurrentStreams, 100);
});

test("--quota-backend-bytes: 0 is 2 GiB, negative is no quota, above 8 GiB is warned about", async () => {
  assert.equal((await parse(["--quota-backend-bytes", "1048576"])).quotaBackendBytes, 1048576);
  assert.equal((await parse(["--quota-backend-bytes", "-1"])).quotaBackendBytes, Infinity);
  const big = await parse(["--quota-backend-bytes", String(9 * 1024 ** 3)]);
  assert.equal(big.quotaBackendBytes, 9 * 1024 ** 3);
  assert.ok(big.notices.some((n) => n.level === "warn" && n.msg === "quota exceeds the maximum value"));
  await refuses(["--quota-backend-bytes", "2GB"], /invalid value "2GB" for flag -quota-backend-bytes: parse error/);
});

test("--auto-compaction-*: durations, hours, revisions and etcd's errors", () => {
  assert.deepEqual(autoCompaction("periodic", "1h"), { mode: "periodic", retention: 3_600_000 });
  assert.deepEqual(autoCompaction("periodic", "30m"), { mode: "periodic", retention: 1_800_000 });
  assert.deepEqual(autoCompaction("periodic", "2"), { mode: "periodic", retention: 7_200_000 });
  assert.deepEqual(autoCompaction("revision", "1000"), { mode: "revision", retention: 1000 });
  assert.deepEqual(autoCompaction("periodic", "0"), { mode: "periodic", retention: 0 });
  assert.throws(() => autoCompaction("period", "1"), /unknown auto-compaction-mode "period"/);
  assert.throws(() => autoCompaction("periodic", "1x"), /error parsing CompactionRetention: time: unknown unit "x" in duration "1x"/);
  assert.throws(() => autoCompaction("periodic", "-1"), /error parsing CompactionRetention: time: missing unit in duration "-1"/);
  const notices: { msg: string }[] = [];
  assert.deepEqual(autoCompaction("revision", "1s", notices as never), { mode: "revision", retention: 1e9 });
  assert.equal(notices.length, 1, "a duration in revision mode is taken as etcd takes it, and said");
});

test("--auth-token is decomposed and checked as etcd's token providers do", () => {
  assert.deepEqual(parseAuthToken("simple"), { type: "simple" });
  assert.deepEqual(parseAuthToken(""), { type: "none" });
  assert.throws(() => parseAuthToken("opaque"), /auth: invalid auth options \(unknown token type: opaque\)/);
  assert.throws(() => parseAuthToken("jwt,sign-method"), /auth: invalid auth options \(invalid token specific option: jwt,sign-method\)/);
  assert.throws(() => parseAuthToken("jwt,ttl=1m,ttl=2m"), /duplicated parameters \(ttl\)/);
  assert.throws(() => parseAuthToken("jwt,sign-method=XX1"), /auth: invalid auth signature method/);
  assert.throws(() => parseAuthToken("jwt,sign-method=RS256,ttl=5"), /time: missing unit in duration "5"/);
  assert.throws(() => parseAuthToken("jwt,sign-method=RS256,pub-key=/no/such.pem"), /open \/no\/such\.pem: no such file or directory/);
  assert.throws(() => parseAuthToken("jwt,sign-method=HS256"), /auth: missing key data/);
  const notices: { msg: string }[] = [];
  const key = join(dir, "pub.pem");
  writeFileSync(key, "-----BEGIN PUBLIC KEY-----\n");
  // The keys are parsed at start, as etcd's NewTokenProvider does: a broken one is a start-up error.
  assert.throws(() => parseAuthToken(`jwt,sign-method=RS256,pub-key=${key}`), /Key is not a valid RSA public key/);
  writeFileSync(key, generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey.export({ format: "pem", type: "spki" }));
  assert.deepEqual(parseAuthToken(`jwt,sign-method=RS256,pub-key=${key},color=blue`, notices as never), { type: "jwt", signMethod: "RS256", publicKeyFile: key, privateKeyFile: "", ttlMs: 300_000 });
  assert.deepEqual(notices.map((n) => n.msg), ["unknown JWT options"]);
});

test("--cors takes * or scheme://host:port URLs, as etcd's UniqueURLs", () => {
  assert.deepEqual(parseCors("*"), ["*"]);
  assert.deepEqual(parseCors("http://a:1, http://a:1 ,https://[::1]:2"), ["http://a:1", "https://[::1]:2"]);
  assert.throws(() => parseCors("http://a.example"), /invalid value "http:\/\/a.example" for flag -cors: URL address does not have the form "host:port": http:\/\/a.example/);
  assert.throws(() => parseCors("ftp://a:1"), /URL scheme must be http, https, unix, or unixs: ftp:\/\/a:1/);
  assert.throws(() => parseCors("http://a:1/x"), /URL must not contain a path: http:\/\/a:1\/x/);
});

const bad: Array<[string[], RegExp]> = [
  [["--enable-v2=maybe"], /invalid boolean value "maybe" for -enable-v2: parse error/],
  [["--max-wals", "-1"], /invalid value "-1" for flag -max-wals: parse error/],
  [["--logger", "glog"], /unknown logger option "glog"/],
  [["--logger", "capnslog", "--log-outputs", "stderr,stdout"], /--logger=capnslog supports only 1 value in '--log-outputs', got \["stderr" "stdout"\]/],
  [["--logger", "capnslog", "--log-outputs", "/var/log/x"], /unknown log-output "\/var\/log\/x" \(only supports "default", "stderr", "stdout"\)/],
  [["--log-outputs", "default,stdout"], /multi logoutput for "default" is not supported yet/],
  [["--log-output", "stderr", "--log-outputs", "stdout"], /both '--log-output' and '--log-outputs' are set/],
  [["--experimental-watch-progress-notify-interval", "10"], /invalid value "10" for flag -experimental-watch-progress-notify-interval: parse error/],
  [["--grpc-keepalive-min-time=fast"], /invalid value "fast" for flag -grpc-keepalive-min-time: parse error/],
  [["--bcrypt-cost", "x"], /invalid value "x" for flag -bcrypt-cost: parse error/],
  [["--max-concurrent-streams", "4294967296"], /value out of range/],
  [["--discovery", "https://discovery.etcd.io/x", "--initial-cluster", "default=http://127.0.0.1:2380"], /multiple discovery or bootstrap flags are set/],
  [["--discovery-fallback", "retry"], /invalid value "retry" for flag -discovery-fallback/],
  [["--peer-cert-allowed-cn", "a", "--peer-cert-allowed-hostname", "b"], /AllowedCN and AllowedHostname are mutually exclusive \(cn="a", hostname="b"\)/],
  [["--experimental-enable-lease-checkpoint-persist"], /setting experimental-enable-lease-checkpoint-persist requires experimental-enable-lease-checkpoint/],
  [["--listen-metrics-urls", "http://127.0.0.1"], /listen-metrics-urls/],
  [["--auto-compaction-mode", "hourly"], /unknown auto-compaction-mode "hourly"/],
];
for (const [args, re] of bad) test(`refuses ${args.join(" ")}`, () => refuses(args, re));

test("lease checkpoints: off by default; on with etcd's warning when not persisted; the interval defaults to 5m", async () => {
  assert.deepEqual((await parse([])).leaseCheckpoint, { enabled: false, persist: false, intervalMs: 300_000 });
  const on = await parse(["--experimental-enable-lease-checkpoint", "--experimental-lease-checkpoint-interval", "1500ms"]);
  assert.deepEqual(on.leaseCheckpoint, { enabled: true, persist: false, intervalMs: 1500 });
  assert.deepEqual(on.notices.map((n) => n.msg), ["Detected that checkpointing is enabled without persistence. Consider enabling experimental-enable-lease-checkpoint-persist"]);
  const persisted = await parse(["--experimental-enable-lease-checkpoint=true", "--experimental-enable-lease-checkpoint-persist", "--experimental-lease-checkpoint-interval=0"]);
  assert.deepEqual(persisted.leaseCheckpoint, { enabled: true, persist: true, intervalMs: 300_000 });
  assert.deepEqual(persisted.notices, [], "acted on: no notice");
  assert.deepEqual((await parse([], { KV_EXPERIMENTAL_ENABLE_LEASE_CHECKPOINT: "true", ETCD_EXPERIMENTAL_ENABLE_LEASE_CHECKPOINT_PERSIST: "true" })).leaseCheckpoint.persist, true);
});

test("--experimental-compaction-batch-limit: etcd's 1000 by default and for 0 (or less); acted on, no notice", async () => {
  assert.equal((await parse([])).compactionBatchLimit, 1000);
  const c = await parse(["--experimental-compaction-batch-limit", "50"]);
  assert.equal(c.compactionBatchLimit, 50);
  assert.deepEqual(c.notices, []);
  assert.equal((await parse(["--experimental-compaction-batch-limit=0"])).compactionBatchLimit, 1000);
  assert.equal((await parse(["--experimental-compaction-batch-limit=-3"])).compactionBatchLimit, 1000);
  await refuses(["--experimental-compaction-batch-limit", "many"], /invalid value "many" for flag -experimental-compaction-batch-limit: parse error/);
});

test("an etcd flag kvctl does not act on is one warning, and the start goes on", async () => {
  const c = await parse(["--enable-pprof", "--experimental-backend-bbolt-freelist-type", "map", "--discovery-proxy", "http://p:1"]);
  assert.deepEqual(c.notices.map((n) => n.msg.split(":")[0]), ["--enable-pprof", "--experimental-backend-bbolt-freelist-type"]);
  assert.ok(c.notices.every((n) => n.level === "warn"));
  assert.match(c.notices[0]!.msg, /node --cpu-prof/);
});

test("--discovery-proxy is read as etcd's newProxyFunc reads it: a value without a scheme is http", async () => {
  assert.equal((await parse(["--discovery-proxy", "http://p:1"])).discoveryProxy?.href, "http://p:1/");
  assert.equal((await parse(["--discovery-proxy", "p:3128"])).discoveryProxy?.href, "http://p:3128/");
  assert.equal((await parse([])).discoveryProxy, undefined);
});

test("etcd 0.4's flags are ignored with etcd's warning; -version prints and stops", async () => {
  const c = await parse(["-v", "--snapshot=true", "--name", "x"]);
  assert.equal(c.name, "x");
  assert.deepEqual(c.notices.map((n) => n.msg), ['flag "-v" is no longer supported - ignoring.', 'flag "-snapshot" is no longer supported - ignoring.']);
  let printed = "";
  assert.equal(await parseServeArgs(["--version"], {}, (t) => (printed += t)), null);
  assert.match(printed, /^kvctl Version: .*\netcd Version: 3\.4\.23/);
  assert.equal(await parseServeArgs(["--version=false", "--help"], {}, () => undefined), null);
});

test("ETCD_ variables are read when the KV_ one is absent, and logged", async () => {
  const c = await parse([], { ETCD_NAME: "e", ETCD_DATA_DIR: "/d", ETCD_ENABLE_V2: "false", ETCD_SNAPSHOT_COUNT: "7", KV_SNAPSHOT_COUNT: "9", ETCD_QUOTA_BACKEND_BYTES: "" });
  assert.equal(c.name, "e");
  assert.equal(c.dataDir, "/d");
  assert.equal(c.enableV2, false);
  assert.equal(c.snapshotCount, 9, "KV_ wins over ETCD_");
  assert.equal(c.quotaBackendBytes, 2147483648, "an empty ETCD_ variable is not read (etcd)");
  assert.ok(c.notices.some((n) => n.msg === "recognized and used environment variable" && n.fields?.["variable"] === "ETCD_NAME=e"));
});

test("ETCD_ variables: unknown ones are warned about, one shadowed by a flag is etcd's error", async () => {
  const c = await parse([], { ETCD_UNKNOWN_THING: "1", ETCDCTL_API: "3", ETCD_VERSION: "3.4.23" });
  assert.deepEqual(c.notices.map((n) => [n.level, n.msg, n.fields?.["variable"]]), [["warn", "unrecognized environment variable", "ETCD_UNKNOWN_THING=1"]]);
  await refuses(["--name", "flag"], /conflicting environment variable "ETCD_NAME" is shadowed by corresponding command-line flag \(either unset environment variable or disable flag\)/, { ETCD_NAME: "env" });
  await refuses([], /invalid value "abc" for ETCD_SNAPSHOT_COUNT/, { ETCD_SNAPSHOT_COUNT: "abc" });
  await refuses([], /invalid value "maybe" for ETCD_PRE_VOTE: parse error/, { ETCD_PRE_VOTE: "maybe" });
  assert.equal((await parse(["--name", "flag"], { KV_NAME: "env" })).name, "flag", "a KV_ variable is shadowed silently, as before");
});

test("etcd's YAML file: keys, transport security sections, YAML 1.1 booleans, durations", () => {
  const { values, notices } = parseConfigYaml(`
name: 'infra1'
data-dir: /var/lib/etcd
snapshot-count: 10000
enable-v2: yes
listen-client-urls: http://10.0.0.1:2379,http://127.0.0.1:2379
cipher-suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
log-outputs: [stderr]
experimental-watch-progress-notify-interval: 600000000000
grpc-keepalive-timeout: 30s
auto-compaction-retention: "1"
client-transport-security:
  cert-file: /c.pem
  key-file: /k.pem
  client-cert-auth: true
  trusted-ca-file: /ca.pem
peer-transport-security:
  auto-tls: true
proxy: 'off'
not-an-etcd-key: 1
`);
  assert.deepEqual(Object.fromEntries(values), {
    name: "infra1", "data-dir": "/var/lib/etcd", "snapshot-count": "10000", "enable-v2": "true",
    "listen-client-urls": "http://10.0.0.1:2379,http://127.0.0.1:2379", "cipher-suites": "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "log-outputs": "stderr", "experimental-watch-progress-notify-interval": "600000000000ns", "grpc-keepalive-timeout": "30s",
    "auto-compaction-retention": "1", "cert-file": "/c.pem", "key-file": "/k.pem", "client-cert-auth": "true", "trusted-ca-file": "/ca.pem",
    "peer-auto-tls": "true", proxy: "off",
  });
  assert.deepEqual(notices.map((n) => n.fields?.["key"]), ["not-an-etcd-key"]);
});

test("etcd's YAML file: a value of the wrong type is Go's json error", () => {
  assert.throws(() => parseConfigYaml("snapshot-count: many\n"), /json: cannot unmarshal string into Go struct field configYAML\.snapshot-count of type uint64/);
  assert.throws(() => parseConfigYaml("auto-compaction-retention: 1\n"), /cannot unmarshal number 1 into Go struct field configYAML\.auto-compaction-retention of type string/);
  assert.throws(() => parseConfigYaml("enable-v2: 'true'\n"), /cannot unmarshal string into Go struct field configYAML\.enable-v2 of type bool/);
  assert.throws(() => parseConfigYaml("max-wals: -1\n"), /cannot unmarshal number -1 into Go struct field configYAML\.max-wals of type uint/);
  assert.throws(() => parseConfigYaml("proxy-dial-timeout: x\n"), /Go struct field configProxy\.proxy-dial-timeout of type uint/);
  assert.throws(() => parseConfigYaml("- a\n- b\n"), /cannot unmarshal array into Go value of type embed\.configYAML/);
  assert.throws(() => parseConfigYaml("name: [\n"), /error converting YAML to JSON/);
  assert.deepEqual(Object.fromEntries(parseConfigYaml("").values), {});
});

test("--config-file replaces flags and variables, with etcd's defaults for what it leaves out", async () => {
  const file = join(dir, "etcd.conf.yml");
  writeFileSync(file, [
    "name: n1", `data-dir: ${join(dir, "n1")}`, "listen-client-urls: http://127.0.0.1:23790", "listen-peer-urls: http://127.0.0.1:23800",
    "initial-advertise-peer-urls: http://127.0.0.1:23800", "initial-cluster: n1=http://127.0.0.1:23800", "enable-v2: false",
    "quota-backend-bytes: 4294967296", "auto-compaction-mode: revision", "auto-compaction-retention: '100'", "",
  ].join("\n"));
  const c = await parse(["--config-file", file, "--name", "ignored", "--snapshot-count", "5"], { KV_MAX_WALS: "1", ETCD_NAME: "ignored-too" });
  assert.equal(c.configFile, file);
  assert.equal(c.name, "n1");
  assert.equal(c.snapshotCount, 100000, "the command line is ignored");
  assert.equal(c.maxWals, 5, "variables are ignored");
  assert.equal(c.enableV2, false);
  assert.equal(c.quotaBackendBytes, 4294967296);
  assert.deepEqual(c.autoCompaction, { mode: "revision", retention: 100 });
  assert.deepEqual(c.advertiseClientUrls, ["http://127.0.0.1:2379"], "etcd keeps its default advertised URL with a file");
  assert.equal(c.notices[0]?.msg, "loaded server configuration, other configuration command line flags and environment variables will be ignored if provided");
  // ETCD_CONFIG_FILE names the file too.
  assert.equal((await parse([], { ETCD_CONFIG_FILE: file })).name, "n1");
  await refuses(["--config-file", join(dir, "missing.yml")], /open .*missing\.yml: no such file or directory/);
});
