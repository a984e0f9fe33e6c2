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

test("help about a topic that does not exist: urfave/cli's No help topic, exit 3; a known one prints it", async () => {
  for (const [argv, topic] of [[["help", "bogus"], "bogus"], [["h", "bogus"], "bogus"], [["member", "help", "bogus"], "bogus"], [["--endpoints", "http://x", "help", "nope"], "nope"]] as const) {
    const r = await run([...argv]);
    assert.deepEqual([r.code, r.stdout, r.stderr], [3, "", `No help topic for '${topic}'\n`], argv.join(" "));
  }
  for (const [argv, first] of [[["member", "help", "list"], "kvctl member list"], [["help", "member", "list"], "kvctl member list"], [["help", "member", "bogus"], "kvctl member <subcommand>"], [["help", "get"], "kvctl get <key>"]] as const) {
    const r = await run([...argv]);
    assert.equal(r.code, 0, argv.join(" "));
    assert.equal(r.stdout.split("\n")[0], first, argv.join(" "));
  }
});
