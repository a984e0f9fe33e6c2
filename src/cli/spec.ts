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
  { name: "peers", aliases: ["C"], type: "string", description: 'DEPRECATED - "--endpoints" should be used instead' },
  { name: "endpoint", type: "string", description: 'DEPRECATED - "--endpoints" should be used instead' },
  {
    name: "endpoints",
    type: "string",
    default: defaultEndpoints,
    description: "a comma-delimited list of machine addresses in the cluster, tried in turn",
  },
  { name: "cert-file", type: "string", description: "identify HTTPS client using this SSL certificate file" },
  { name: "key-file", type: "string", description: "identify HTTPS client using this SSL key file" },
  { name: "ca-file", type: "string", description: "verify certificates of HTTPS-enabled servers using this CA bundle" },
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

export const commands: readonly CommandSpec[] = [
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
  { name: "stats", args: "<store|self|leader>", description: "print the store, member (self) or leader statistics as JSON", flags: [] },
  { name: "version", args: "", description: "print the version of kvctl", flags: [] },
  { name: "completion", args: "<bash|zsh|fish>", description: "print a shell completion script", flags: [] },
  { name: "serve", args: "[flags]", description: "Start a kvctl server (member)", flags: [] },
];

export function findCommand(name: string): CommandSpec | undefined {
  return commands.find((c) => c.name === name);
}

/** The KV_ variable a global flag reads: `total-timeout` -> `KV_TOTAL_TIMEOUT`. */
export function envName(flag: string): string {
  return `KV_${flag.toUpperCase().replace(/-/g, "_")}`;
}
