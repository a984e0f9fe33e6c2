// The man page and the three completion scripts are written by hand: these tests make
// sure none of them forgets a command or a flag of spec.ts.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { commands, globalFlags, v3Commands, type FlagSpec } from "./spec.ts";
import { serveFlags as serveFlagTable } from "../server/config.ts";

const read = (rel: string): string => readFileSync(new URL(`../../${rel}`, import.meta.url), "utf8");
// roff escapes dashes as \-; compare on the unescaped text.
const man = read("man/kvctl.1").replace(/\\-/g, "-");
const completions = { bash: read("completions/kvctl.bash"), zsh: read("completions/_kvctl"), fish: read("completions/kvctl.fish") };

const names = (f: FlagSpec): string[] => [f.name, ...(f.aliases ?? [])];
const dashed = (n: string): string => (n.length === 1 ? `-${n}` : `--${n}`);
// The server's own flag table: a flag added to `kvctl serve` must reach the docs too.
const serveFlags = serveFlagTable.map((f) => f.name);

test("the man page documents every command, flag and KV_ variable", () => {
  for (const c of commands) assert.match(man, new RegExp(`\\b${c.name}\\b`), c.name);
  for (const f of globalFlags) {
    for (const n of names(f)) assert.ok(man.includes(dashed(n)), `global ${dashed(n)}`);
    if (f.name !== "help" && f.name !== "version") assert.ok(man.includes(`KV_${f.name.toUpperCase().replace(/-/g, "_")}`), f.name);
  }
  for (const c of commands) for (const f of c.flags) for (const n of names(f)) assert.ok(man.includes(dashed(n)), `${c.name} ${dashed(n)}`);
  for (const c of commands) {
    for (const sub of c.subcommands ?? []) {
      assert.match(man, new RegExp(`\\b${c.name} ${sub.name}\\b`), `${c.name} ${sub.name}`);
      for (const f of sub.flags) for (const n of names(f)) assert.ok(man.includes(dashed(n)), `${c.name} ${sub.name} ${dashed(n)}`);
    }
  }
  for (const s of serveFlags) {
    assert.ok(man.includes(`--${s}`), `serve --${s}`);
    assert.ok(man.includes(`KV_${s.toUpperCase().replace(/-/g, "_")}`), `serve KV_ for ${s}`);
  }
});

for (const [shell, text] of Object.entries(completions)) {
  test(`the ${shell} completion offers every command and flag`, () => {
    for (const c of commands) assert.ok(text.includes(c.name), `${shell}: command ${c.name}`);
    for (const f of globalFlags) assert.ok(text.includes(f.name), `${shell}: --${f.name}`);
    for (const c of commands) for (const f of c.flags) assert.ok(text.includes(f.name), `${shell}: ${c.name} --${f.name}`);
    for (const c of commands) {
      for (const sub of c.subcommands ?? []) {
        assert.ok(text.includes(sub.name), `${shell}: ${c.name} ${sub.name}`);
        for (const f of sub.flags) for (const n of names(f)) assert.ok(text.includes(n), `${shell}: ${c.name} ${sub.name} --${n}`);
      }
    }
    for (const s of serveFlags) assert.ok(text.includes(s), `${shell}: serve --${s}`);
  });
}

// The loops above reach `v3 <command>`; these reach the flags of `v3 <group> <command>`
// (snapshot restore's), which the docs must list too.
test("the man page and completions list the flags of v3 group subcommands", () => {
  for (const c of v3Commands) {
    for (const sub of c.subcommands ?? []) {
      for (const f of sub.flags) {
        for (const n of names(f)) {
          assert.ok(man.includes(dashed(n)), `man: v3 ${c.name} ${sub.name} ${dashed(n)}`);
          for (const [shell, text] of Object.entries(completions)) assert.ok(text.includes(n), `${shell}: v3 ${c.name} ${sub.name} ${dashed(n)}`);
        }
      }
    }
  }
});
