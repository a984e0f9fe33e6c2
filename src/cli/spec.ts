// The command line as data: every global flag, command and command flag, with etcdctl
// v2's names, aliases, defaults and help texts. Both parsers (argv.ts, the fast path;
// yargs-app.ts, help and errors) are built from this table, and tests check that the man
// page and the shell completions mention every entry. Pure data: imports nothing.

/** `strings`: repeatable, each occurrence adds a value (urfave/cli's StringSliceFlag). */
export type FlagType = "bool" | "string" | "int" | "duration" | "strings";

export interface FlagSpec {
  /** Long name without dashes (`swap-with-value`). */
  readonly name: string;
  /** Other names, long or one-letter (`r`, `peers`). */
  readonly aliases?: readonly string[];
  readonly type: FlagType;
  /** Shown in help; also the value used when the flag is absent. */
  readonly default?: string;
  readonly description: string;
}

export interface CommandSpec {
  readonly name: string;
  /** Positional arguments as etcdctl documents them. */
  readonly args: string;
  readonly description: string;
  readonly flags: readonly FlagSpec[];
  readonly subcommands?: readonly CommandSpec[];
}

const ttl: FlagSpec = { name: "ttl", type: "int", default: "0", description: "key time-to-live in seconds" };
const quorum: FlagSpec = {
  name: "quorum",
  aliases: ["q"],
  type: "bool",
  description: "require quorum for get request",
};
const sort: FlagSpec = { name: "sort", type: "bool", description: "returns result in sorted order" };
const afterIndex: FlagSpec = {
  name: "after-index",
  type: "int",
  default: "0",
  description: "watch after the given index",
};

const roles: FlagSpec = { name: "roles", type: "strings", description: "List of roles to grant or revoke" };

/** role grant / revoke flags: etcdctl words "Grant read-only access" / "Revoke read access". */
function permissionFlags(verb: "Grant" | "Revoke", pathWords: string): FlagSpec[] {
  const grant = verb === "Grant";
  return [
    { name: "path", type: "string", default: "", description: `Path ${pathWords} the role to access` },
    { name: "read", type: "bool", description: `${verb} ${grant ? "read-only" : "read"} access` },
    { name: "write", type: "bool", description: `${verb} ${grant ? "write-only" : "write"} access` },
    { name: "readwrite", aliases: ["rw"], type: "bool", description: `${verb} read-write access` },
  ];
}

export const defaultEndpoints = "http://127.0.0.1:2379,http://127.0.0.1:4001";

/** Global flags. Each is also read from KV_<NAME> (upper case, `-` -> `_`). */
export const globalFlags: readonly FlagSpec[] = [
  { name: "debug", type: "bool", description: "output cURL commands which can be used to reproduce the request" },
  { name: "no-sync", type: "bool", description: "don't synchronize cluster information before sending request" },
  {
    name: "output",
    aliases: ["o"],
    type: "string",
    default: "simple",
    description: "output response in the given format (simple, extended or json)",
  },
  {
    name: "discovery-srv",
    aliases: ["D"],
    type: "string",
    description: "domain name to query for SRV records describing cluster endpoints",
  },
  { name: "insecure-discovery", type: "bool", description: "accept insecure SRV records describing cluster endpoints" },
  { name: "peers", aliases: ["C"], type: "string", description: 'DEPRECATED - "--endpoints" should be used instead' },
  { name: "endpoint", type: "string", description: 'DEPRECATED - "--endpoints" should be used instead' },
  {
    name: "endpoints",
    type: "string",
    default: defaultEndpoints,
    description: "a comma-delimited list of machine addresses in the cluster, tried in turn",
  },
  // TLS: etcdctl v3's names; etcdctl v2's --cert-file/--key-file/--ca-file stay as aliases.
  { name: "cert", aliases: ["cert-file"], type: "string", description: "identify HTTPS client using this SSL certificate file" },
  { name: "key", aliases: ["key-file"], type: "string", description: "identify HTTPS client using this SSL key file" },
  { name: "cacert", aliases: ["ca-file"], type: "string", description: "verify certificates of HTTPS-enabled servers using this CA bundle" },
  {
    name: "insecure-skip-tls-verify",
    type: "bool",
    description: "skip server certificate verification (CAUTION: this option should be enabled only for testing purposes)",
  },
  {
    name: "insecure-transport",
    type: "bool",
    default: "true",
    description: "disable transport security for http:// endpoints (false: use TLS for them too)",
  },
  {
    name: "username",
    aliases: ["u"],
    type: "string",
    description: "provide username[:password] and prompt if password is not supplied.",
  },
  { name: "password", type: "string", description: "password for --username (better given as KV_PASSWORD)" },
  { name: "timeout", type: "duration", default: "2s", description: "connection timeout per request" },
  {
    name: "total-timeout",
    type: "duration",
    default: "5s",
    description: "timeout for the command execution (except watch)",
  },
  { name: "no-color", type: "bool", description: "never colour the output (colour is only used on a terminal)" },
  { name: "help", aliases: ["h"], type: "bool", description: "show help" },
  { name: "version", aliases: ["v"], type: "bool", description: "print the version" },
];

// ---- v3 command group (kvctl v3 …) -------------------------------------------------
// etcdctl v3's commands and flags (cobra/pflag grammar: `--flag value`, `--flag=value`,
// `-w json`, flags anywhere, `--` ends them). `v3Flags` are its persistent (global) flags,
// each also read from KV_<NAME>, then ETCDCTL_<NAME>. The v3 parser is
// commands/v3/argv.ts; run.ts hands it every argv whose command word is `v3`.

/** A v3 command may have aliases (`range` for get, `compact` for compaction). */
export interface V3CommandSpec extends CommandSpec {
  readonly aliases?: readonly string[];
  readonly subcommands?: readonly V3CommandSpec[];
}

export const v3DefaultEndpoints = "http://127.0.0.1:2379";

export const v3Flags: readonly FlagSpec[] = [
  { name: "endpoints", type: "string", default: v3DefaultEndpoints, description: "comma-separated gateway endpoints (scheme optional), tried in turn" },
  { name: "debug", type: "bool", description: "print each gateway request on stderr" },
  { name: "write-out", aliases: ["w"], type: "string", default: "simple", description: "set the output format (fields, json, protobuf, simple, table)" },
  { name: "hex", type: "bool", description: "print byte strings as hex encoded strings" },
  { name: "dial-timeout", type: "duration", default: "2s", description: "timeout for connecting to an endpoint" },
  { name: "command-timeout", type: "duration", default: "5s", description: "timeout for short running command (excluding dial timeout)" },
  { name: "keepalive-time", type: "duration", default: "2s", description: "accepted for etcdctl compatibility (HTTP keeps connections alive)" },
  { name: "keepalive-timeout", type: "duration", default: "6s", description: "accepted for etcdctl compatibility (HTTP keeps connections alive)" },
  { name: "insecure-transport", type: "bool", default: "true", description: "disable transport security for client connections" },
  { name: "insecure-skip-tls-verify", type: "bool", description: "skip server certificate verification (CAUTION: this option should be enabled only for testing purposes)" },
  { name: "cert", type: "string", description: "identify secure client using this TLS certificate file" },
  { name: "key", type: "string", description: "identify secure client using this TLS key file" },
  { name: "cacert", type: "string", description: "verify certificates of TLS-enabled secure servers using this CA bundle" },
  { name: "user", type: "string", description: "username[:password] for authentication (prompt if password is not supplied)" },
  { name: "password", type: "string", description: "password for authentication (if this option is used, --user option shouldn't include password)" },
  { name: "discovery-srv", aliases: ["d"], type: "string", description: "domain name to query for SRV records describing cluster endpoints" },
  { name: "discovery-srv-name", type: "string", description: "service name to query when using DNS discovery" },
  { name: "insecure-discovery", type: "bool", default: "true", description: "accept insecure SRV records describing cluster endpoints" },
];

const v3Prefix = (what: string): FlagSpec => ({ name: "prefix", type: "bool", description: `${what} keys with matching prefix` });
const v3FromKey = (what: string): FlagSpec => ({
  name: "from-key",
  type: "bool",
  description: `${what} keys that are greater than or equal to the given key using byte compare`,
});
const v3PrevKv: FlagSpec = { name: "prev-kv", type: "bool", description: "return the previous key-value pair before modification" };
const v3Interactive: FlagSpec = { name: "interactive", type: "bool", default: "true", description: "Read password from the terminal (false: the next line of stdin)" };
const v3PermFlags = (verb: string): FlagSpec[] => [
  { name: "prefix", type: "bool", description: `${verb} a prefix permission` },
  { name: "from-key", type: "bool", description: `${verb} a permission of keys that are greater than or equal to the given key using byte compare` },
];

const v3GetFlags: FlagSpec[] = [
  { name: "consistency", type: "string", default: "l", description: "Linearizable(l) or Serializable(s)" },
  { name: "order", type: "string", default: "", description: "Order of results; ASCEND or DESCEND (ASCEND by default)" },
  { name: "sort-by", type: "string", default: "", description: "Sort target; CREATE, KEY, MODIFY, VALUE, or VERSION" },
  { name: "limit", type: "int", default: "0", description: "Maximum number of results" },
  v3Prefix("Get"),
  v3FromKey("Get"),
  { name: "rev", type: "int", default: "0", description: "Specify the kv revision" },
  { name: "keys-only", type: "bool", description: "Get only the keys" },
  { name: "count-only", type: "bool", description: "Get only the count (with --write-out=fields)" },
  { name: "print-value-only", type: "bool", description: 'Only write values when using the "simple" output format' },
];

export const v3Commands: readonly V3CommandSpec[] = [
  { name: "get", aliases: ["range"], args: "<key> [range_end]", description: "Gets the key or a range of keys", flags: v3GetFlags },
  { name: "put", args: "<key> [value]", description: "Puts the given key into the store (<value> can also be given from stdin)", flags: [
    { name: "lease", type: "string", default: "0", description: "lease ID (in hexadecimal) to attach to the key" },
    v3PrevKv,
    { name: "ignore-value", type: "bool", description: "updates the key using its current value" },
    { name: "ignore-lease", type: "bool", description: "updates the key using its current lease" },
  ] },
  { name: "del", args: "<key> [range_end]", description: "Removes the specified key or range of keys [key, range_end)", flags: [
    { name: "prefix", type: "bool", description: "delete keys with matching prefix" },
    { name: "prev-kv", type: "bool", description: "return deleted key-value pairs" },
    v3FromKey("delete"),
  ] },
  { name: "txn", args: "", description: "Txn processes all the requests in one transaction (etcdctl's line format, or a JSON TxnRequest)", flags: [
    { name: "interactive", aliases: ["i"], type: "bool", description: "Input transaction in interactive mode" },
    { name: "file", type: "string", description: "read the transaction from this file (JSON TxnRequest or etcdctl's line format; - for stdin)" },
  ] },
  { name: "compaction", aliases: ["compact"], args: "<revision>", description: "Compacts the event history in etcd", flags: [
    { name: "physical", type: "bool", description: "'true' to wait for compaction to physically remove all old revisions" },
  ] },
  { name: "watch", args: "[key] [range_end] [--] [args...]", description: "Watches events stream on keys or prefixes", flags: [
    { name: "interactive", aliases: ["i"], type: "bool", description: "Interactive mode" },
    { name: "prefix", type: "bool", description: "Watch on a prefix if prefix is set" },
    { name: "rev", type: "int", default: "0", description: "Revision to start watching" },
    { name: "prev-kv", type: "bool", description: "get the previous key-value pair before the event happens" },
  ] },
  { name: "lease", args: "<subcommand>", description: "Lease related commands", flags: [], subcommands: [
    { name: "grant", args: "<ttl>", description: "Creates leases", flags: [] },
    { name: "revoke", args: "<leaseID>", description: "Revokes leases", flags: [] },
    { name: "timetolive", args: "<leaseID>", description: "Get lease information", flags: [
      { name: "keys", type: "bool", description: "Get keys attached to this lease" },
    ] },
    { name: "list", args: "", description: "List all active leases", flags: [] },
    { name: "keep-alive", args: "<leaseID>", description: "Keeps leases alive (renew)", flags: [
      { name: "once", type: "bool", description: "Resets the keep-alive time to its original value and exits immediately" },
    ] },
  ] },
  { name: "user", args: "<subcommand>", description: "User related commands", flags: [], subcommands: [
    { name: "add", args: "<user>", description: "Adds a new user", flags: [
      v3Interactive,
      { name: "new-user-password", type: "string", description: "Supply password from the command line flag" },
      { name: "no-password", type: "bool", description: "Create a user without password (CN based auth only)" },
    ] },
    { name: "delete", args: "<user>", description: "Deletes a user", flags: [] },
    { name: "get", args: "<user>", description: "Gets detailed information of a user", flags: [
      { name: "detail", type: "bool", description: "Show permissions of roles granted to the user" },
    ] },
    { name: "list", args: "", description: "Lists all users", flags: [] },
    { name: "passwd", args: "<user>", description: "Changes password of user", flags: [v3Interactive] },
    { name: "grant-role", args: "<user> <role>", description: "Grants a role to a user", flags: [] },
    { name: "revoke-role", args: "<user> <role>", description: "Revokes a role from a user", flags: [] },
  ] },
  { name: "role", args: "<subcommand>", description: "Role related commands", flags: [], subcommands: [
    { name: "add", args: "<role>", description: "Adds a new role", flags: [] },
    { name: "delete", args: "<role>", description: "Deletes a role", flags: [] },
    { name: "get", args: "<role>", description: "Gets detailed information of a role", flags: [] },
    { name: "list", args: "", description: "Lists all roles", flags: [] },
    { name: "grant-permission", args: "<role> <permission> <key> [endkey]", description: "Grants a key to a role", flags: v3PermFlags("grant") },
    { name: "revoke-permission", args: "<role> <key> [endkey]", description: "Revokes a key from a role", flags: v3PermFlags("revoke") },
  ] },
  { name: "auth", args: "<enable|disable>", description: "Enable or disable authentication", flags: [], subcommands: [
    { name: "enable", args: "", description: "Enables authentication", flags: [] },
    { name: "disable", args: "", description: "Disables authentication", flags: [] },
  ] },
  { name: "alarm", args: "<subcommand>", description: "Alarm related commands", flags: [], subcommands: [
    { name: "disarm", args: "", description: "Disarms all alarms", flags: [] },
    { name: "list", args: "", description: "Lists all alarms", flags: [] },
  ] },
  { name: "defrag", args: "", description: "Defragments the storage of the etcd members with given endpoints", flags: [
    { name: "cluster", type: "bool", description: "use all endpoints from the cluster member list" },
    { name: "data-dir", type: "string", default: "", description: "Optional. If present, defragments a data directory not in use by etcd (refused: a kvctl data dir is defragmented by its running member)" },
  ] },
  { name: "endpoint", args: "<subcommand>", description: "Endpoint related commands", flags: [
    { name: "cluster", type: "bool", description: "use all endpoints from the cluster member list" },
  ], subcommands: [
    { name: "health", args: "", description: "Checks the healthiness of endpoints specified in `--endpoints` flag", flags: [] },
    { name: "status", args: "", description: "Prints out the status of endpoints specified in `--endpoints` flag", flags: [] },
    { name: "hashkv", args: "", description: "Prints the KV history hash for each endpoint in --endpoints", flags: [
      { name: "rev", type: "int", default: "0", description: "maximum revision to hash (default: all revisions)" },
    ] },
  ] },
  { name: "member", args: "<subcommand>", description: "Membership related commands", flags: [], subcommands: [
    { name: "add", args: "<memberName> [options]", description: "Adds a member into the cluster", flags: [
      { name: "peer-urls", type: "string", default: "", description: "comma separated peer URLs for the new member." },
      { name: "learner", type: "bool", description: "indicates if the new member is raft learner" },
    ] },
    { name: "remove", args: "<memberID>", description: "Removes a member from the cluster", flags: [] },
    { name: "update", args: "<memberID> [options]", description: "Updates a member in the cluster", flags: [
      { name: "peer-urls", type: "string", default: "", description: "comma separated peer URLs for the updated member." },
    ] },
    { name: "list", args: "", description: "Lists all members in the cluster", flags: [] },
    { name: "promote", args: "<memberID>", description: "Promotes a non-voting member in the cluster", flags: [] },
  ] },
  { name: "move-leader", args: "<transferee-member-id>", description: "Transfers leadership to another etcd cluster member.", flags: [] },
  { name: "lock", args: "<lockname> [exec-command arg1 arg2 ...]", description: "Acquires a named lock", flags: [
    { name: "ttl", type: "int", default: "10", description: "timeout for session" },
  ] },
  { name: "elect", args: "<election-name> [proposal]", description: "Observes and participates in leader election", flags: [
    { name: "listen", aliases: ["l"], type: "bool", description: "observation mode" },
  ] },
  { name: "check", args: "<subcommand>", description: "commands for checking properties of the etcd cluster", flags: [], subcommands: [
    { name: "perf", args: "[options]", description: "Check the performance of the etcd cluster", flags: [
      { name: "load", type: "string", default: "s", description: "The performance check's workload model. Accepted workloads: s(small), m(medium), l(large), xl(xLarge)" },
      { name: "prefix", type: "string", default: "/etcdctl-check-perf/", description: "The prefix for writing the performance check's keys." },
      { name: "auto-compact", type: "bool", description: "Compact storage with last revision after test is finished." },
      { name: "auto-defrag", type: "bool", description: "Defragment storage after test is finished." },
    ] },
    { name: "datascale", args: "[options]", description: "Check the memory usage of holding data for different workloads on a given server endpoint.", flags: [
      { name: "load", type: "string", default: "s", description: "The datascale check's workload model. Accepted workloads: s(small), m(medium), l(large), xl(xLarge)" },
      { name: "prefix", type: "string", default: "/etcdctl-check-datascale/", description: "The prefix for writing the datascale check's keys." },
      { name: "auto-compact", type: "bool", description: "Compact storage with last revision after test is finished." },
      { name: "auto-defrag", type: "bool", description: "Defragment storage after test is finished." },
    ] },
  ] },
  { name: "make-mirror", args: "<destination>", description: "Makes a mirror at the destination etcd cluster", flags: [
    { name: "prefix", type: "string", default: "", description: "Key-value prefix to mirror" },
    { name: "dest-prefix", type: "string", default: "", description: "destination prefix to mirror a prefix to a different prefix in the destination cluster" },
    { name: "no-dest-prefix", type: "bool", description: "mirror key-values to the root of the destination cluster" },
    { name: "dest-cert", type: "string", default: "", description: "Identify secure client using this TLS certificate file for the destination cluster" },
    { name: "dest-key", type: "string", default: "", description: "Identify secure client using this TLS key file" },
    { name: "dest-cacert", type: "string", default: "", description: "Verify certificates of TLS enabled secure servers using this CA bundle" },
    { name: "dest-insecure-transport", type: "bool", default: "true", description: "Disable transport security for client connections" },
  ] },
  { name: "completion", args: "<bash|zsh|fish>", description: "Generate the autocompletion script for the specified shell (kvctl's: completions/)", flags: [], subcommands: [
    { name: "bash", args: "", description: "Generate the autocompletion script for bash", flags: [] },
    { name: "fish", args: "", description: "Generate the autocompletion script for fish", flags: [] },
    { name: "zsh", args: "", description: "Generate the autocompletion script for zsh", flags: [] },
  ] },
  { name: "help", args: "[command]", description: "Help about any command", flags: [] },
  { name: "migrate", args: "", description: "Migrates keys in a v2 store to a mvcc store (refused: kvctl keeps both in one data dir; kvctl migrate copies a running etcd)", flags: [
    { name: "data-dir", type: "string", default: "", description: "Path to the data directory" },
    { name: "wal-dir", type: "string", default: "", description: "Path to the WAL directory" },
    { name: "no-ttl", type: "bool", description: "Do not convert TTL keys" },
    { name: "transformer", type: "string", default: "", description: "Path to the user-provided transformer program" },
  ] },
  { name: "version", args: "", description: "Prints the version of etcdctl", flags: [] },
  { name: "snapshot", args: "<subcommand>", description: "Manages etcd node snapshots", flags: [], subcommands: [
    { name: "save", args: "<filename>", description: "Stores an etcd node backend snapshot to a given file", flags: [] },
    { name: "restore", args: "<filename> [options]", description: "Restores an etcd member snapshot to an etcd directory (a kvctl data dir, offline)", flags: [
      { name: "name", type: "string", default: "default", description: "Human-readable name for this member" },
      { name: "data-dir", type: "string", default: "", description: "Path to the data directory (default: <name>.kvctl, as kvctl serve; etcdctl's is <name>.etcd)" },
      { name: "initial-cluster", type: "string", default: "", description: "Initial cluster configuration for restore bootstrap (default: <name>=<initial-advertise-peer-urls>)" },
      { name: "initial-cluster-token", type: "string", default: "etcd-cluster", description: "Initial cluster token for the etcd cluster during restore bootstrap" },
      { name: "initial-advertise-peer-urls", type: "string", default: "http://localhost:2380", description: "List of this member's peer URLs to advertise to the rest of the cluster" },
      { name: "skip-hash-check", type: "bool", description: "Ignore snapshot integrity hash value (required if copied from data directory)" },
      { name: "wal-dir", type: "string", default: "", description: "Path to the WAL directory (use --data-dir if none given; start the member with the same serve --wal-dir)" },
    ] },
    { name: "status", args: "<filename>", description: "Gets backend snapshot status of a given file", flags: [] },
  ] },
];

/** `kvctl v3 …`: its flags are the v3 persistent flags, its subcommands etcdctl v3's commands. */
export const v3Command: V3CommandSpec = {
  name: "v3",
  args: "<command>",
  description: "etcdctl v3 commands through the v3 JSON gateway (put, get, del, txn, watch, lease, user, role, auth, alarm, defrag, snapshot, endpoint, member, lock, elect, make-mirror, check …; endpoint hashkv over gRPC)",
  flags: v3Flags,
  subcommands: v3Commands,
};
// ---- end of the v3 command group ---------------------------------------------------

export const commands: readonly CommandSpec[] = [
  { name: "backup", args: "", description: "backup an etcd directory", flags: [
    { name: "data-dir", type: "string", default: "", description: "Path to the etcd data dir" },
    { name: "wal-dir", type: "string", default: "", description: "Path to the etcd wal dir" },
    { name: "backup-dir", type: "string", default: "", description: "Path to the backup dir" },
    { name: "backup-wal-dir", type: "string", default: "", description: "Path to the backup wal dir" },
    { name: "with-v3", type: "bool", description: "Backup v3 backend data" },
  ] },
  { name: "cluster-health", args: "", description: "check the health of the etcd cluster", flags: [
    { name: "forever", aliases: ["f"], type: "bool", description: "forever check the health every 10 second until CTRL+C" },
  ] },
  { name: "mk", args: "<key> <value>", description: "make a new key with a given value", flags: [
    { name: "in-order", type: "bool", description: "create in-order key under directory <key>" },
    ttl,
  ] },
  { name: "mkdir", args: "<key>", description: "make a new directory", flags: [ttl] },
  { name: "rm", args: "<key>", description: "remove a key or a directory", flags: [
    { name: "dir", type: "bool", description: "removes the key if it is an empty directory or a key-value pair" },
    { name: "recursive", aliases: ["r"], type: "bool", description: "removes the key and all child keys(if it is a directory)" },
    { name: "with-value", type: "string", default: "", description: "previous value" },
    { name: "with-index", type: "int", default: "0", description: "previous index" },
  ] },
  { name: "rmdir", args: "<key>", description: "removes the key if it is an empty directory or a key-value pair", flags: [] },
  { name: "get", args: "<key>", description: "retrieve the value of a key", flags: [sort, quorum] },
  { name: "ls", args: "[key]", description: "retrieve a directory", flags: [
    sort,
    { name: "recursive", aliases: ["r"], type: "bool", description: "returns all key names recursively for the given path" },
    { name: "p", type: "bool", description: "append slash (/) to directories" },
    quorum,
  ] },
  { name: "set", args: "<key> <value>", description: "set the value of a key", flags: [
    ttl,
    { name: "swap-with-value", type: "string", default: "", description: "previous value" },
    { name: "swap-with-index", type: "int", default: "0", description: "previous index" },
  ] },
  { name: "setdir", args: "<key>", description: "create a new directory or update an existing directory TTL", flags: [ttl] },
  { name: "update", args: "<key> <value>", description: "update an existing key with a given value", flags: [ttl] },
  { name: "updatedir", args: "<key>", description: "update an existing directory", flags: [ttl] },
  { name: "watch", args: "<key>", description: "watch a key for changes", flags: [
    { name: "forever", aliases: ["f"], type: "bool", description: "forever watch a key until CTRL+C" },
    afterIndex,
    { name: "recursive", aliases: ["r"], type: "bool", description: "returns all values for key and child keys" },
  ] },
  { name: "exec-watch", args: "<key> [--] <command> [args...]", description: "watch a key for changes and exec an executable", flags: [
    afterIndex,
    { name: "recursive", aliases: ["r"], type: "bool", description: "watch all values for key and child keys" },
  ] },
  { name: "member", args: "<subcommand>", description: "member add, remove, update and list subcommands", flags: [], subcommands: [
    { name: "list", args: "", description: "enumerate existing cluster members", flags: [] },
    { name: "add", args: "<name> <peerURL>", description: "add a new member to the etcd cluster", flags: [] },
    { name: "remove", args: "<memberID>", description: "remove an existing member from the etcd cluster", flags: [] },
    { name: "update", args: "<memberID> <peerURLs>", description: "update an existing member in the etcd cluster", flags: [] },
  ] },
  { name: "user", args: "<subcommand>", description: "user add, grant and revoke subcommands", flags: [], subcommands: [
    { name: "add", args: "<user>", description: "add a new user for the etcd cluster", flags: [] },
    { name: "get", args: "<user>", description: "get details for a user", flags: [] },
    { name: "list", args: "", description: "list all current users", flags: [] },
    { name: "remove", args: "<user>", description: "remove a user for the etcd cluster", flags: [] },
    { name: "grant", args: "<user>", description: "grant roles to an etcd user", flags: [roles] },
    { name: "revoke", args: "<user>", description: "revoke roles for an etcd user", flags: [roles] },
    { name: "passwd", args: "<user>", description: "change password for a user", flags: [] },
  ] },
  { name: "role", args: "<subcommand>", description: "role add, grant and revoke subcommands", flags: [], subcommands: [
    { name: "add", args: "<role>", description: "add a new role for the etcd cluster", flags: [] },
    { name: "get", args: "<role>", description: "get details for a role", flags: [] },
    { name: "list", args: "", description: "list all roles", flags: [] },
    { name: "remove", args: "<role>", description: "remove a role from the etcd cluster", flags: [] },
    { name: "grant", args: "<role>", description: "grant path matches to an etcd role", flags: permissionFlags("Grant", "granted for") },
    { name: "revoke", args: "<role>", description: "revoke path matches for an etcd role", flags: permissionFlags("Revoke", "revoked for") },
  ] },
  { name: "auth", args: "<subcommand>", description: "overall auth controls", flags: [], subcommands: [
    { name: "enable", args: "", description: "enable auth access controls", flags: [] },
    { name: "disable", args: "", description: "disable auth access controls", flags: [] },
    { name: "status", args: "", description: "print whether auth is enabled (Authentication Status: true|false)", flags: [] },
  ] },
  { name: "endpoint", args: "<subcommand>", description: "endpoint status subcommand", flags: [], subcommands: [
    { name: "status", args: "", description: "print the member id, leadership, raft term and raft index of each endpoint", flags: [
      { name: "cluster", type: "bool", description: "use all endpoints from the cluster member list" },
    ] },
  ] },
  { name: "migrate", args: "", description: "copy a running etcd's v2 and v3 key spaces into kvctl (--endpoints); --follow then applies its changes until interrupted", flags: [
    { name: "from", type: "string", description: "client URLs of the etcd to copy from (comma-separated)" },
    { name: "prefix", type: "string", default: "", description: "copy only the v2 keys under this path and the v3 keys starting with it" },
    { name: "follow", type: "bool", description: "after the copy, apply etcd's later changes (v2 and v3 watches) until interrupted" },
    { name: "from-cert", type: "string", description: "identify to etcd with this TLS certificate file" },
    { name: "from-key", type: "string", description: "identify to etcd with this TLS key file" },
    { name: "from-cacert", type: "string", description: "verify etcd's certificate with this CA bundle" },
    { name: "from-insecure-skip-tls-verify", type: "bool", description: "accept any certificate from etcd (testing only)" },
    { name: "from-user", type: "string", description: "username[:password] for etcd (prompts for the password when absent)" },
  ] },
  { name: "stats", args: "<store|self|leader>", description: "print the store, member (self) or leader statistics as JSON", flags: [] },
  { name: "version", args: "", description: "print the version of kvctl", flags: [] },
  { name: "completion", args: "<bash|zsh|fish>", description: "print a shell completion script", flags: [] },
  { name: "serve", args: "[flags]", description: "Start a kvctl member: an etcd-compatible server (v2 and v3 APIs, gRPC, Raft)", flags: [] },
  v3Command,
];

export function findCommand(name: string): CommandSpec | undefined {
  return commands.find((c) => c.name === name);
}

/** The KV_ variable a global flag reads: `total-timeout` -> `KV_TOTAL_TIMEOUT`. */
export function envName(flag: string): string {
  return `KV_${flag.toUpperCase().replace(/-/g, "_")}`;
}
