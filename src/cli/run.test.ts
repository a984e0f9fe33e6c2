// runCli's own decisions, without a server: which help a bare command group prints.
import { test } from "node:test";
import assert from "node:assert/strict";
import { runCli } from "./run.ts";

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) }, {});
  return { code, stdout, stderr };
}

test("a bare command group prints its own help, also after global flags that take a value", async () => {
  for (const argv of [["member"], ["--endpoints", "http://127.0.0.1:1", "member"], ["-o", "json", "-C", "http://x", "member"]]) {
    const r = await run(argv);
    assert.equal(r.code, 0, argv.join(" "));
    assert.equal(r.stderr, "");
    assert.match(r.stdout, /^kvctl member <subcommand>\n/, argv.join(" "));
  }
  const user = await run(["--endpoints=http://127.0.0.1:1", "--timeout", "1s", "user"]);
  assert.match(user.stdout, /^kvctl user <subcommand>\n/);
});
