// kvctl user / role / auth against a real server, as one transcript: each step's stdout,
// stderr and exit code are what `ETCDCTL_API=2 etcdctl` prints for the same command on
// etcd 3.4 (recorded by hand; the only deliberate difference is that kvctl never prints
// the password prompt on stdout). Steps depend on the ones before them, so they run in
// order. Against etcd: KVCTL_TEST_SERVER=etcd.

import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { runKvctl, startServer, type TestServer } from "../helpers/server.ts";

let srv: TestServer;
before(async () => {
  srv = await startServer();
});
after(async () => {
  await srv?.stop();
});

interface Step {
  name: string;
  args: string[];
  /** Written to stdin (a password line, when the command asks for one). */
  input?: string;
  env?: Record<string, string>;
  stdout?: string | RegExp;
  stderr?: string | RegExp;
  code: number;
}

const root = ["-u", "root:rootpw"];

const steps: Step[] = [
  { name: "user list is empty on a new cluster", args: ["user", "list"], stdout: "", code: 0 },
  { name: "user add refuses an empty password (empty stdin)", args: ["user", "add", "root"], stderr: "auth: Cannot create user root with an empty password\n", code: 1 },
  { name: "user add reads the new password from stdin without printing a prompt", args: ["user", "add", "root"], input: "rootpw\n", stdout: "User root created\n", code: 0 },
  { name: "user add takes name:password", args: ["user", "add", "alice:apw"], stdout: "User alice created\n", code: 0 },
  { name: "user get prints etcdctl's Roles line for role objects", args: ["user", "get", "root"], stdout: "User: root\nRoles:  root\n", code: 0 },
  { name: "user get of an unknown user exits 1 with the server's message", args: ["user", "get", "nobody"], stderr: "auth: User nobody does not exist.\n", code: 1 },
  { name: "user get wants one name", args: ["user", "get"], stderr: "Please provide a username\n", code: 1 },
  { name: "role add creates a role", args: ["role", "add", "r1"], stdout: "Role r1 created\n", code: 0 },
  { name: "role add of an existing role exits 1", args: ["role", "add", "r1"], stderr: "Role r1 already exists\n", code: 1 },
  { name: "role get of a new role lists no permission", args: ["role", "get", "r1"], stdout: "Role: r1\nKV Read:\nKV Write:\n", code: 0 },
  { name: "role grant --read grants a prefix", args: ["role", "grant", "r1", "--path", "/foo/*", "--read"], stdout: "Role r1 updated\n", code: 0 },
  { name: "role grant of a duplicate exits 1", args: ["role", "grant", "r1", "--path", "/foo/*", "--read"], stderr: "auth: Granting duplicate read permission /foo/*\n", code: 1 },
  { name: "role grant --rw grants read and write", args: ["role", "grant", "r1", "--path", "/bar", "--rw"], stdout: "Role r1 updated\n", code: 0 },
  { name: "role grant wants a canonical path", args: ["role", "grant", "r1", "--path", "/bar//x", "--rw"], stderr: "Not canonical path; please use `--path=/bar/x`\n", code: 1 },
  { name: "role grant of an unknown role exits 1", args: ["role", "grant", "nosuch", "--path", "/x", "--read"], stderr: "auth: Role nosuch does not exist.\n", code: 1 },
  { name: "role get lists read and write paths", args: ["role", "get", "r1"], stdout: "Role: r1\nKV Read:\n\t/bar\n\t/foo/*\nKV Write:\n\t/bar\n", code: 0 },
  { name: "role revoke --write revokes the write path", args: ["role", "revoke", "r1", "--path", "/bar", "--write"], stdout: "Role r1 updated\n", code: 0 },
  { name: "role revoke of what is not granted exits 1", args: ["role", "revoke", "r1", "--path", "/bar", "--write"], stderr: "auth: Role not updated. Use grant/revoke to update the role.\n", code: 1 },
  { name: "role add creates a second role", args: ["role", "add", "r2"], stdout: "Role r2 created\n", code: 0 },
  { name: "user grant wants --roles", args: ["user", "grant", "alice"], stderr: "No roles specified; please use `--roles`\n", code: 1 },
  { name: "user grant takes repeated --roles", args: ["user", "grant", "alice", "--roles", "r1", "--roles", "r2"], stdout: "User alice updated\n", code: 0 },
  { name: "user get shows both roles", args: ["user", "get", "alice"], stdout: "User: alice\nRoles:   r1 r2\n", code: 0 },
  { name: "user grant of a granted role exits 1", args: ["user", "grant", "alice", "--roles", "r1"], stderr: "auth: Granting duplicate role r1 for user alice\n", code: 1 },
  { name: "user revoke revokes a role", args: ["user", "revoke", "alice", "--roles", "r2"], stdout: "User alice updated\n", code: 0 },
  { name: "user revoke of an ungranted role exits 1", args: ["user", "revoke", "alice", "--roles", "r2"], stderr: "auth: Revoking ungranted role r2 for user alice\n", code: 1 },
  { name: "user passwd reads the new password from stdin", args: ["user", "passwd", "alice"], input: "alicepw\n", stdout: "Password updated\n", code: 0 },
  { name: "user list lists the users in order", args: ["user", "list"], stdout: "alice\nroot\n", code: 0 },
  { name: "role list lists the roles in order", args: ["role", "list"], stdout: "r1\nr2\nroot\n", code: 0 },
  { name: "auth status is false before auth enable", args: ["auth", "status"], stdout: "Authentication Status: false\n", code: 0 },
  { name: "auth enable takes no argument", args: ["auth", "enable", "x"], stderr: "No arguments accepted\n", code: 1 },
  { name: "auth enable enables auth", args: ["auth", "enable"], stdout: "Authentication Enabled\n", code: 0 },
  { name: "auth status needs no credentials", args: ["auth", "status"], stdout: "Authentication Status: true\n", code: 0 },
  { name: "auth enable again without credentials is refused", args: ["auth", "enable"], stderr: "Insufficient credentials\n", code: 1 },
  { name: "user list without credentials is refused", args: ["user", "list"], stderr: "Insufficient credentials\n", code: 1 },
  { name: "role list without credentials gives the status code, as etcdctl", args: ["role", "list"], stderr: "unexpected status code 401\n", code: 1 },
  { name: "a wrong password is refused", args: ["-u", "root:bad", "user", "list"], stderr: "Insufficient credentials\n", code: 1 },
  { name: "-u root:password lists the users", args: [...root, "user", "list"], stdout: "alice\nroot\n", code: 0 },
  { name: "KV_USERNAME and KV_PASSWORD are used", args: ["role", "list"], env: { KV_USERNAME: "root", KV_PASSWORD: "rootpw" }, stdout: "guest\nr1\nr2\nroot\n", code: 0 },
  {
    name: "-u without a password reads it, then the new password, from stdin",
    args: ["-u", "root", "user", "add", "bob"],
    input: "rootpw\nbobpw\n",
    stdout: "User bob created\n",
    code: 0,
  },
  { name: "the new user's password works", args: ["-u", "bob:bobpw", "auth", "status"], stdout: "Authentication Status: true\n", code: 0 },
  { name: "root writes a key", args: [...root, "set", "/foo/a", "1"], stdout: "1\n", code: 0 },
  { name: "get sends the credentials (alice may read /foo/*)", args: ["-u", "alice:alicepw", "get", "/foo/a"], stdout: "1\n", code: 0 },
  {
    name: "set sends the credentials (alice may not write /foo/*)",
    args: ["-u", "alice:alicepw", "set", "/foo/a", "2"],
    stderr: /^Error: {2}110: The request requires user authentication \(Insufficient credentials\) \[\d+\]\n$/,
    code: 4,
  },
  // `/foo/*` covers what is below /foo/, not /foo itself.
  { name: "ls sends the credentials", args: ["-u", "alice:alicepw", "ls", "/foo/"], stdout: "/foo/a\n", code: 0 },
  { name: "watch sends the credentials", args: ["-u", "alice:alicepw", "watch", "--after-index", "1", "/foo/a"], stdout: "1\n", code: 0 },
  { name: "a user without the root role cannot disable auth", args: ["-u", "alice:alicepw", "auth", "disable"], stderr: "Insufficient credentials\n", code: 1 },
  { name: "root cannot be removed while auth is enabled", args: [...root, "user", "remove", "root"], stderr: "auth: Cannot delete root user while auth is enabled.\n", code: 1 },
  { name: "the root role cannot be removed", args: [...root, "role", "remove", "root"], stderr: "auth: Cannot modify role root: is root role.\n", code: 1 },
  { name: "auth disable disables auth", args: [...root, "auth", "disable"], stdout: "Authentication Disabled\n", code: 0 },
  { name: "auth disable again exits 1", args: ["auth", "disable"], stderr: "auth: already disabled\n", code: 1 },
  { name: "user remove removes a user", args: ["user", "remove", "bob"], stdout: "User bob removed\n", code: 0 },
  { name: "user remove of an unknown user exits 1", args: ["user", "remove", "bob"], stderr: "auth: User bob does not exist\n", code: 1 },
  { name: "role remove removes a role", args: ["role", "remove", "r2"], stdout: "Role r2 removed\n", code: 0 },
  { name: "role remove of an unknown role exits 1", args: ["role", "remove", "r2"], stderr: "auth: Role r2 doesn't exist.\n", code: 1 },
];

for (const s of steps) {
  test(s.name, async () => {
    const r = await runKvctl(["--endpoints", srv.url, ...s.args], {
      ...(s.input !== undefined ? { input: s.input } : {}),
      ...(s.env !== undefined ? { env: s.env } : {}),
    });
    const check = (what: string, got: string, want: string | RegExp | undefined): void => {
      if (want instanceof RegExp) assert.match(got, want, what);
      else assert.equal(got, want ?? "", what);
    };
    check("stdout", r.stdout, s.stdout);
    check("stderr", r.stderr, s.stderr);
    assert.equal(r.code, s.code, `exit code; stderr=${r.stderr}`);
  });
}

test("--debug prints the requests and Cluster-Endpoints twice, as etcdctl's auth commands", async () => {
  const r = await runKvctl(["--debug", "--endpoints", srv.url, "role", "grant", "r1", "--path", "/z", "--write"]);
  assert.equal(r.stdout, "Role r1 updated\n");
  assert.equal(r.code, 0);
  assert.equal(
    r.stderr,
    [
      `start to sync cluster using endpoints(${srv.url})`,
      `cURL Command: curl -X GET ${srv.url}/v2/members`,
      `got endpoints(${srv.url}) after sync`,
      `Cluster-Endpoints: ${srv.url}`,
      `Cluster-Endpoints: ${srv.url}`,
      `cURL Command: curl -X GET ${srv.url}/v2/auth/roles/r1`,
      `cURL Command: curl -X PUT ${srv.url}/v2/auth/roles/r1 -d ${JSON.stringify(
        '{"role":"r1","permissions":{"kv":{"read":null,"write":null}},"grant":{"kv":{"read":null,"write":["/z"]}}}',
      )}`,
      "",
    ].join("\n"),
  );
});
