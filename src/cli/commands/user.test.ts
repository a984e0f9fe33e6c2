import { test } from "node:test";
import assert from "node:assert/strict";
import { parseArgv } from "../argv.ts";
import { buildInvocation, type Invocation } from "../invocation.ts";
import { yargsInvocation } from "../yargs-app.ts";
import { runCli } from "../run.ts";
import type { Io } from "../io.ts";
import { formatUser, splitUserArg } from "./user.ts";

function invocation(argv: string[]): Invocation {
  const r = parseArgv(argv);
  assert.equal(r.kind, "ok", JSON.stringify(r));
  if (r.kind !== "ok") throw new Error("unreachable");
  return buildInvocation(r.raw, {});
}

/** Runs kvctl in-process; argument errors happen before any connection. */
async function run(argv: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  let stdout = "";
  let stderr = "";
  const io: Io = { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) };
  const code = await runCli(["--endpoints", "http://127.0.0.1:9", ...argv], io, {});
  return { stdout, stderr, code };
}

test("user grant collects every --roles, in order, without splitting commas", () => {
  const inv = invocation(["user", "grant", "--roles", "a,b", "bob", "-roles=c"]);
  assert.equal(inv.subcommand, "grant");
  assert.deepEqual(inv.flags["roles"], ["a,b", "c"]);
  assert.deepEqual(inv.args, ["bob"]);
});

test("user revoke without --roles has an empty list", () => {
  assert.deepEqual(invocation(["user", "revoke", "bob"]).flags["roles"], []);
});

const equivalence: string[][] = [
  ["user", "add", "bob"],
  ["-u", "root:pw", "user", "grant", "--roles", "r1", "bob"],
  ["user", "list"],
  ["role", "grant", "r1", "--path", "/foo/*", "--rw"],
  ["role", "revoke", "--read", "--path=/a", "r1"],
  ["auth", "status"],
  ["-o", "json", "endpoint", "status", "--cluster"],
];
for (const argv of equivalence) {
  test(`yargs and the fast parser agree on ${argv.join(" ")}`, async () => {
    assert.deepEqual(await yargsInvocation(argv, {}), invocation(argv));
  });
}

const splitCases: [string, { user: string; password: string | undefined }][] = [
  ["bob", { user: "bob", password: undefined }],
  ["bob:pw", { user: "bob", password: "pw" }],
  ["bob:p:w", { user: "bob", password: "p:w" }],
  ["bob:", { user: "bob", password: "" }],
];
for (const [arg, want] of splitCases) {
  test(`splitUserArg splits ${JSON.stringify(arg)} at the first colon`, () => {
    assert.deepEqual(splitUserArg(arg), want);
  });
}

test("formatUser prints etcdctl's two lines", () => {
  assert.equal(formatUser({ user: "root", roles: ["", "root"] }), "User: root\nRoles:  root\n");
  assert.equal(formatUser({ user: "bob", roles: [] }), "User: bob\nRoles: \n");
});

const argErrors: { argv: string[]; stderr: string }[] = [
  { argv: ["user", "add"], stderr: "Please provide a username\n" },
  { argv: ["user", "get", "a", "b"], stderr: "Please provide a username\n" },
  { argv: ["user", "list", "x"], stderr: "No arguments accepted\n" },
  { argv: ["user", "grant", "bob"], stderr: "No roles specified; please use `--roles`\n" },
  { argv: ["user", "revoke", "--roles", "r"], stderr: "Please provide a username\n" },
  { argv: ["user", "passwd"], stderr: "Please provide a username\n" },
];
for (const c of argErrors) {
  test(`kvctl ${c.argv.join(" ")} exits 1 before connecting`, async () => {
    assert.deepEqual(await run(c.argv), { stdout: "", stderr: c.stderr, code: 1 });
  });
}

test("kvctl user bogus is an unknown command (exit 3)", async () => {
  assert.deepEqual(await run(["user", "bogus"]), { stdout: "", stderr: "No help topic for 'bogus'\n", code: 3 });
});
