import { test } from "node:test";
import assert from "node:assert/strict";
import { CliExit } from "../exit-codes.ts";
import { runCli } from "../run.ts";
import type { Io } from "../io.ts";
import { decodeRole } from "../../client/v2-auth.ts";
import { formatRole, permissionArgs } from "./role.ts";

const permCases: { name: string; flags: Record<string, unknown>; want: { path: string; perm: string } | string }[] = [
  { name: "reads --read", flags: { path: "/foo/*", read: true }, want: { path: "/foo/*", perm: "read" } },
  { name: "reads --write", flags: { path: "/foo", write: true }, want: { path: "/foo", perm: "write" } },
  { name: "reads --readwrite", flags: { path: "/", readwrite: true }, want: { path: "/", perm: "readwrite" } },
  { name: "wants a path first", flags: { path: "", read: true, write: true }, want: "No path specified; please use `--path`\n" },
  { name: "wants a canonical path", flags: { path: "/a//b/../c", read: true }, want: "Not canonical path; please use `--path=/a/c`\n" },
  { name: "wants a leading slash", flags: { path: "a", read: true }, want: "Not canonical path; please use `--path=/a`\n" },
  { name: "keeps a trailing slash canonical", flags: { path: "/a/", read: true }, want: { path: "/a/", perm: "read" } },
  { name: "wants one permission", flags: { path: "/a" }, want: "Please specify exactly one of --read, --write or --readwrite\n" },
  { name: "wants only one permission", flags: { path: "/a", read: true, readwrite: true }, want: "Please specify exactly one of --read, --write or --readwrite\n" },
];
for (const c of permCases) {
  test(`permissionArgs ${c.name}`, () => {
    if (typeof c.want === "string") {
      assert.throws(() => permissionArgs(c.flags), (err: unknown) => err instanceof CliExit && err.exitCode === 1 && err.stderr === c.want);
    } else {
      assert.deepEqual(permissionArgs(c.flags), c.want);
    }
  });
}

test("formatRole prints each permission on a tab-indented line", () => {
  const role = decodeRole({ role: "r1", permissions: { kv: { read: ["/bar", "/foo/*"], write: null } } });
  assert.equal(formatRole(role), "Role: r1\nKV Read:\n\t/bar\n\t/foo/*\nKV Write:\n");
});

async function run(argv: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  let stdout = "";
  let stderr = "";
  const io: Io = { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) };
  const code = await runCli(["--endpoints", "http://127.0.0.1:9", ...argv], io, {});
  return { stdout, stderr, code };
}

const argErrors: { argv: string[]; stderr: string }[] = [
  { argv: ["role", "add"], stderr: "Please provide a role name\n" },
  { argv: ["role", "list", "x"], stderr: "No arguments accepted\n" },
  { argv: ["role", "grant", "--path", "/x", "--read"], stderr: "Please provide a role name\n" },
  { argv: ["role", "grant", "r1", "--read"], stderr: "No path specified; please use `--path`\n" },
  { argv: ["role", "revoke", "r1", "--path", "/x", "-rw", "--write"], stderr: "Please specify exactly one of --read, --write or --readwrite\n" },
  { argv: ["auth", "enable", "x"], stderr: "No arguments accepted\n" },
  { argv: ["auth", "status", "x"], stderr: "No arguments accepted\n" },
];
for (const c of argErrors) {
  test(`kvctl ${c.argv.join(" ")} exits 1 before connecting`, async () => {
    assert.deepEqual(await run(c.argv), { stdout: "", stderr: c.stderr, code: 1 });
  });
}
