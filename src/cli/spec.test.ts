// The man page, the three completion scripts and README.md are written by hand; the
// command line they describe is spec.ts (from which yargs builds `--help` and both parsers
// read their grammar) and config.ts's serveFlags (`kvctl serve`). These tests read every
// document back into the same shape, command by command, and fail with the full list of
// what a document lacks (missing) and what it offers that the code does not have (extra).
// Pure: they read files and render help; nothing else.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { commands, globalFlags, v3Commands, v3Flags, type CommandSpec } from "./spec.ts";
import { ignoredEtcdFlags, serveFlags, serveHelp } from "../server/config.ts";
import { helpText } from "./yargs-app.ts";

const read = (rel: string): string => readFileSync(new URL(`../../${rel}`, import.meta.url), "utf8");

// ---- the code's inventory ----------------------------------------------------------
// Granularity: a group is a top-level command (`get`, `user`, `serve`), `v3 <command>`, or
// the global flags ("" for kvctl's, "v3" for etcdctl v3's persistent ones). A group's flags
// are its own and its subcommands' (completions offer them by command, not always by
// subcommand); its subcommands are the words that may follow it.

const dashed = (n: string): string => (n.length === 1 ? `-${n}` : `--${n}`);
const flagNames = (fs: readonly { name: string; aliases?: readonly string[] | undefined }[]): string[] =>
  fs.flatMap((f) => [f.name, ...(f.aliases ?? [])]).map(dashed);

interface Group {
  flags: Set<string>;
  subcommands: Set<string>;
}

function groupOf(c: CommandSpec): Group {
  const subs = c.subcommands ?? [];
  return {
    flags: new Set([...flagNames(c.flags), ...subs.flatMap((s) => flagNames(s.flags))]),
    subcommands: new Set(subs.flatMap((s) => [s.name, ...((s as { aliases?: readonly string[] }).aliases ?? [])])),
  };
}

const code = new Map<string, Group>();
code.set("", { flags: new Set(flagNames(globalFlags)), subcommands: new Set(commands.map((c) => c.name)) });
for (const c of commands) if (c.name !== "v3" && c.name !== "serve") code.set(c.name, groupOf(c));
code.set("serve", { flags: new Set(flagNames(serveFlags)), subcommands: new Set() });
code.set("v3", { flags: new Set(flagNames(v3Flags)), subcommands: new Set(v3Commands.flatMap((c) => [c.name, ...(c.aliases ?? [])])) });
for (const c of v3Commands) code.set(`v3 ${c.name}`, groupOf(c));
// Arguments that are not subcommands in spec.ts but are completed as words.
const wordArgs: Record<string, readonly string[]> = { stats: ["store", "self", "leader"], completion: ["bash", "zsh", "fish"] };
for (const [g, ws] of Object.entries(wordArgs)) for (const w of ws) code.get(g)?.subcommands.add(w);
/** Accepted beyond the tables: urfave/cli's `help` command, serve's own --version/--help. */
const tolerated: Record<string, readonly string[]> = { "": ["help"], serve: ["--version", "--help", "-h"] };

/** Every flag name any part of kvctl accepts (for documents that mention flags in prose). */
const everyFlag = new Set<string>([...code.values()].flatMap((g) => [...g.flags]));
for (const n of ignoredEtcdFlags) everyFlag.add(dashed(n));

type Inventory = Map<string, Group>;
const blank = (): Group => ({ flags: new Set(), subcommands: new Set() });
function at(inv: Inventory, key: string): Group {
  let g = inv.get(key);
  if (g === undefined) inv.set(key, (g = blank()));
  return g;
}

/** Missing and extra, group by group, as readable lines (empty when the document agrees). */
function drift(doc: Inventory, opts: { subcommands: boolean }): string[] {
  const out: string[] = [];
  for (const key of new Set([...code.keys(), ...doc.keys()])) {
    const want = code.get(key);
    const have = doc.get(key);
    const name = key === "" ? "(global)" : key;
    if (want === undefined) {
      out.push(`${name}: documented, but no such command`);
      continue;
    }
    const ok = new Set(tolerated[key] ?? []);
    const missing = [...want.flags].filter((f) => !(have?.flags.has(f) ?? false));
    const extra = [...(have?.flags ?? [])].filter((f) => !want.flags.has(f) && !ok.has(f));
    if (missing.length > 0) out.push(`${name}: missing flags ${missing.join(" ")}`);
    if (extra.length > 0) out.push(`${name}: extra flags ${extra.join(" ")}`);
    if (opts.subcommands) {
      const ms = [...want.subcommands].filter((s) => !(have?.subcommands.has(s) ?? false));
      const xs = [...(have?.subcommands ?? [])].filter((s) => !want.subcommands.has(s) && !ok.has(s));
      if (ms.length > 0) out.push(`${name}: missing subcommands ${ms.join(" ")}`);
      if (xs.length > 0) out.push(`${name}: extra subcommands ${xs.join(" ")}`);
    }
  }
  return out;
}

const flagTokens = (s: string): string[] => [...s.matchAll(/(?:^|[\s"'(,{*|[])(--?[A-Za-z][\w-]*)/g)].map((m) => m[1] ?? "");
const words = (s: string): string[] => s.split(/\s+/).filter((w) => w !== "" && !w.startsWith("$") && !w.startsWith("-"));

// ---- bash --------------------------------------------------------------------------
// `case "$cmd" in` labels at 8 spaces, `case "$sub" in` (v3's commands) at 16; a label's
// flags="..." are its flags, its compgen -W "..." words its subcommands.

function bashInventory(text: string): Inventory {
  const inv: Inventory = new Map();
  const quoted = (re: RegExp): string => text.match(re)?.[1] ?? "";
  at(inv, "").subcommands = new Set(words(quoted(/local commands="([^"]*)"/)));
  at(inv, "").flags = new Set(flagTokens(quoted(/local globals="([^"]*)"/)));
  at(inv, "v3").flags = new Set(flagTokens(quoted(/local v3flags="([^"]*)"/)));
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.includes('case "$cmd" in'));
  let tops: string[] = [];
  let v3s: string[] = [];
  for (const line of lines.slice(start + 1)) {
    const l1 = /^ {8}([\w|"-]+)\)/.exec(line);
    const l2 = /^ {16}([\w|"-]+)\)/.exec(line);
    if (/^ {4}esac/.test(line)) break;
    if (l1 !== null) [tops, v3s] = [(l1[1] ?? "").split("|"), []];
    if (tops[0] === "v3" && l2 !== null) v3s = (l2[1] ?? "").split("|");
    if (tops[0] === '""' || tops[0] === "help" || /^\s*local /.test(line)) continue;
    const keys = tops[0] === "v3" ? (v3s.length === 0 || v3s[0] === '""' ? ["v3"] : v3s.map((c) => `v3 ${canonicalV3(c)}`)) : tops;
    for (const key of keys) {
      const g = at(inv, key);
      for (const m of line.matchAll(/\bflags="([^"]*)"/g)) for (const f of flagTokens(m[1] ?? "")) g.flags.add(f);
      for (const m of line.matchAll(/compgen -W "([^"]*)"/g)) for (const w of words(m[1] ?? "")) g.subcommands.add(w);
    }
  }
  return inv;
}

// ---- zsh ---------------------------------------------------------------------------
// globals=( … ) and cmds=( 'name:description' … ); `case $words[1] in` labels at 8 spaces
// (v2 commands) and 14 (v3's); subcommands from '1:subcommand:(…)' or _values.

function zshFlags(s: string): string[] {
  // Descriptions in [...] may name other flags: leave them out (\[ and \] are literal).
  const bare = s.replace(/\\[[\]]/g, "").replace(/\[[^\]]*\]/g, "");
  return flagTokens(bare);
}

function zshInventory(text: string): Inventory {
  const inv: Inventory = new Map();
  const block = (name: string): string => text.match(new RegExp(`\\b${name}=\\(([\\s\\S]*?)\\n\\s*\\)`))?.[1] ?? "";
  at(inv, "").flags = new Set(zshFlags(block("globals")));
  at(inv, "").subcommands = new Set([...block("cmds").matchAll(/'([\w-]+):/g)].map((m) => m[1] ?? ""));
  const v3flags = text.match(/v3flags=\(([\s\S]*?)\)\n/)?.[1] ?? "";
  at(inv, "v3").flags = new Set(zshFlags(v3flags));
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.includes("case $words[1] in"));
  let tops: string[] = [];
  let v3s: string[] = [];
  let inV3Flags = false;
  for (const line of lines.slice(start + 1)) {
    if (/^ {6}esac/.test(line)) break;
    const l1 = /^ {8}([\w|-]+)\)/.exec(line);
    const l2 = /^ {14}([\w|-]+)\)/.exec(line);
    if (l1 !== null) [tops, v3s] = [(l1[1] ?? "").split("|"), []];
    if (tops[0] === "v3" && l2 !== null) v3s = (l2[1] ?? "").split("|");
    // v3flags=( … ) was read above; `local -a` declares.
    if (line.includes("v3flags=(")) inV3Flags = true;
    if (inV3Flags) {
      inV3Flags = !/\)\s*$/.test(line);
      continue;
    }
    if (/^\s*local /.test(line)) continue;
    const keys = tops[0] === "v3" ? (v3s.length === 0 ? ["v3"] : v3s.map((c) => `v3 ${canonicalV3(c)}`)) : tops;
    const body = line.replace(/^\s*[\w|-]+\)/, "").replace(/\$v3flags|\$ttl/g, "");
    for (const key of keys) {
      const g = at(inv, key);
      if (key !== "v3" || !line.includes("_values")) for (const f of zshFlags(body)) g.flags.add(f);
      if (line.includes("$ttl")) g.flags.add("--ttl");
      for (const m of body.matchAll(/'1:(?:subcommand|kind|shell):\(([^)]*)\)'/g)) for (const w of words(m[1] ?? "")) g.subcommands.add(w);
      const values = /_values '[^']*' (.*)$/.exec(body);
      if (values !== null) for (const w of words(values[1] ?? "")) g.subcommands.add(w);
    }
  }
  return inv;
}

// ---- fish --------------------------------------------------------------------------
// One `complete -c kvctl` a line. `-n 'not __kvctl_at v3,serve'` (or no -n): a global flag;
// -n __kvctl_no_command -a: a command; -n '__kvctl_at A B' / '__kvctl_is A B' (commas
// separate alternatives): the flags of command A (of `v3 B` when A is v3), the -a words
// the subcommands of the command typed so far.

function fishInventory(text: string): Inventory {
  const inv: Inventory = new Map();
  for (const line of text.split("\n")) {
    if (!line.startsWith("complete -c kvctl")) continue;
    const cond = /-n (?:'([^']*)'|"([^"]*)"|(\S+))/.exec(line);
    const condText = cond === null ? "" : (cond[1] ?? cond[2] ?? cond[3] ?? "");
    const flags = [...line.matchAll(/ -l (\S+)/g)].map((m) => `--${m[1]}`).concat([...line.matchAll(/ -s (\S)/g)].map((m) => `-${m[1]}`));
    // -a with -l/-s: the flag's values, not words of the command line.
    const args = flags.length > 0 ? null : /-a (?:'([^']*)'|"([^"]*)"|(\S+))/.exec(line);
    const argWords = args === null ? [] : words(args[1] ?? args[2] ?? args[3] ?? "");
    if (condText === "" || condText === "not __kvctl_at v3,serve") {
      for (const f of flags) at(inv, "").flags.add(f);
      continue;
    }
    if (condText === "__kvctl_no_command") {
      for (const w of argWords) at(inv, "").subcommands.add(w);
      continue;
    }
    const path = /^__kvctl_(?:at|is) (.*)$/.exec(condText);
    if (path === null) {
      at(inv, `(unread condition: ${condText})`);
      continue;
    }
    const [first = "", second] = words(path[1] ?? "").map((w) => w.split(","));
    const keys = first[0] === "v3" ? (second === undefined ? ["v3"] : second.map((c) => `v3 ${canonicalV3(c)}`)) : first;
    for (const k of keys) {
      for (const f of flags) at(inv, k).flags.add(f);
      for (const w of argWords) at(inv, k).subcommands.add(w);
    }
  }
  return inv;
}

function canonicalV3(word: string): string {
  return v3Commands.find((c) => c.name === word || (c.aliases ?? []).includes(word))?.name ?? word;
}

// ---- man page ----------------------------------------------------------------------
// Prose, so by entry: a `.TP` entry belongs to the command its heading line(s) name first
// (`get key`, `user grant …`, `v3 lease revoke id, v3 lease timetolive …`), and a command's
// flags and subcommands must appear in its entries. Global options: their section; v3's
// persistent flags and serve's: the V3 COMMANDS and SERVER sections.

const man = read("man/kvctl.1");
/** roff to plain text: escapes and font changes out, `\-` a dash. */
const plain = (s: string): string =>
  s
    .replace(/\\-/g, "-")
    .replace(/\\f[BIRP]/g, "")
    .replace(/\\[~&|^]/g, " ")
    .replace(/\\\\/g, "\\")
    .replace(/^\.(?:BR|BI|IR|RB|B|I)\s+/gm, "")
    .replace(/"/g, " ");

interface ManEntry {
  section: string;
  heading: string;
  body: string;
}

function manEntries(man: string): ManEntry[] {
  const out: ManEntry[] = [];
  let section = "";
  let cur: ManEntry | undefined;
  let inHeading = false;
  for (const raw of man.split("\n")) {
    if (raw.startsWith(".SH ")) {
      section = raw.slice(4).trim();
      cur = undefined;
      continue;
    }
    if (raw === ".TP" || raw === ".TQ") {
      if (raw === ".TP" || cur === undefined) out.push((cur = { section, heading: "", body: "" }));
      inHeading = true;
      continue;
    }
    if (cur === undefined) {
      out.push((cur = { section, heading: "", body: "" }));
      inHeading = false;
    }
    if (inHeading) {
      cur.heading += ` ${plain(raw)}`;
      inHeading = false;
    }
    cur.body += `${plain(raw)}\n`;
  }
  return out;
}

const v2Sections = new Set(["KEY COMMANDS", "CLUSTER COMMANDS", "AUTH COMMANDS"]);

function manInventory(man: string): Inventory {
  const inv: Inventory = new Map();
  const entries = manEntries(man);
  const text = (pred: (e: ManEntry) => boolean): string => entries.filter(pred).map((e) => `${e.heading}\n${e.body}`).join("\n");
  const collect = (key: string, t: string, spec: Group): void => {
    const g = at(inv, key);
    const tokens = new Set(flagTokens(t));
    // Only the code's names are looked for: prose names etcdctl's and other programs' flags too.
    for (const f of spec.flags) if (tokens.has(f)) g.flags.add(f);
    for (const s of spec.subcommands) if (new RegExp(`(^|[^\\w-])${s}([^\\w-]|$)`).test(t)) g.subcommands.add(s);
  };
  const first = (e: ManEntry): string => e.heading.trim().split(/\s+/)[0] ?? "";
  // Global flags in their own section; each v2 command has entries of its own.
  collect("", text((e) => e.section === "GLOBAL OPTIONS"), { flags: code.get("")!.flags, subcommands: new Set() });
  for (const e of entries) if (v2Sections.has(e.section) && code.get("")!.subcommands.has(first(e))) at(inv, "").subcommands.add(first(e));
  if (entries.some((e) => e.section === "V3 COMMANDS")) at(inv, "").subcommands.add("v3");
  if (entries.some((e) => e.section === "SERVER")) at(inv, "").subcommands.add("serve");
  for (const key of code.keys()) {
    if (key === "" || key === "v3" || key === "serve" || key.startsWith("v3 ")) continue;
    collect(key, text((e) => v2Sections.has(e.section) && first(e) === key), code.get(key)!);
  }
  const v3Text = text((e) => e.section === "V3 COMMANDS");
  collect("v3", v3Text, { flags: code.get("v3")!.flags, subcommands: new Set() });
  for (const c of v3Commands) {
    const names = [c.name, ...(c.aliases ?? [])].join("|");
    const named = new RegExp(`\\bv3 (${names})(?![\\w-])`);
    collect(`v3 ${c.name}`, text((e) => e.section === "V3 COMMANDS" && named.test(e.heading)), code.get(`v3 ${c.name}`)!);
    if (named.test(v3Text)) at(inv, "v3").subcommands.add(c.name);
    for (const a of c.aliases ?? []) if (new RegExp(`\\bv3 ${a}\\b`).test(v3Text)) at(inv, "v3").subcommands.add(a);
  }
  collect("serve", text((e) => e.section === "SERVER"), code.get("serve")!);
  return inv;
}

// ---- the tests ---------------------------------------------------------------------

const completions = {
  bash: bashInventory(read("completions/kvctl.bash")),
  zsh: zshInventory(read("completions/_kvctl")),
  fish: fishInventory(read("completions/kvctl.fish")),
};

for (const [shell, inv] of Object.entries(completions)) {
  test(`the ${shell} completion offers every command, subcommand and flag, and nothing else`, () => {
    assert.deepEqual(drift(inv, { subcommands: true }), []);
  });
}

test("the man page documents every command, subcommand and flag where it describes the command", () => {
  assert.deepEqual(drift(manInventory(man), { subcommands: true }), []);
});

test("the man page names every KV_ variable of the global and serve flags", () => {
  const text = plain(man);
  const missing: string[] = [];
  for (const f of globalFlags) {
    if (f.name === "help" || f.name === "version") continue;
    for (const n of [f.name, ...(f.aliases ?? [])].filter((a) => a.length > 1)) {
      const v = `KV_${n.toUpperCase().replace(/-/g, "_")}`;
      if (!text.includes(v)) missing.push(v);
    }
  }
  for (const f of serveFlags) {
    for (const n of [f.name, ...(f.aliases ?? [])]) {
      const v = `KV_${n.toUpperCase().replace(/-/g, "_")}`;
      if (!text.includes(v)) missing.push(v);
    }
  }
  assert.deepEqual(missing, []);
});

// Prose may name etcd's, etcdctl's and other programs' flags: each is listed here with
// where it comes from, so a flag kvctl dropped cannot hide among them.
const foreignFlags: Record<string, string> = {
  "--progress-notify": "etcdctl watch's flag, named where the man page says what it asks the server for",
  "--cpu-prof": "node's profiler flag",
  "--inspect": "node's inspector flag",
  "--members": "test/fault/run.ts",
  "--duration": "test/fault/run.ts",
  "--faults": "test/fault/run.ts",
  "--flag": "the man page's placeholder in the flag syntax (--flag value)",
  "--noEmit": "tsc's flag (README's test section)",
};

test("the man page and README name no flag the code does not have", () => {
  const unknown = (t: string, where: string): string[] =>
    flagTokens(t)
      // `--experimental-*` (a prefix) names a family of flags.
      .filter((f) => f.startsWith("--") && !f.endsWith("-") && !everyFlag.has(f) && foreignFlags[f] === undefined)
      .map((f) => `${where}: ${f}`);
  const readme = read("README.md");
  assert.deepEqual([...new Set([...unknown(plain(man), "man"), ...unknown(readme, "README")])], []);
});

test("README's kvctl command lines name commands and flags that exist", () => {
  const readme = read("README.md");
  const bad: string[] = [];
  const blocks = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
  for (const line of blocks.join("\n").replace(/\\\n/g, " ").split("\n")) {
    // Command substitutions and quoted strings are other programs' words.
    const shell = line.replace(/\$\([^)]*\)\)?/g, "X").replace(/'[^']*'|"[^"]*"/g, "X");
    for (const m of shell.matchAll(/(?:kvctl|\bbin\/kvctl)((?:\s+[^\s#|&;]+)*)/g)) {
      const argv = (m[1] ?? "").trim().split(/\s+/).filter((w) => w !== "");
      bad.push(...checkArgv(argv).map((e) => `${line.trim()}: ${e}`));
    }
  }
  assert.deepEqual(bad, []);
});

/** What is wrong with one kvctl command line of README (flags must belong to the command). */
function checkArgv(argv: string[]): string[] {
  const valued = new Set<string>([...globalFlags, ...v3Flags].filter((f) => f.type !== "bool").flatMap((f) => flagNames([f])));
  let i = 0;
  const globalsOk = new Set([...code.get("")!.flags, ...code.get("v3")!.flags]);
  const errs: string[] = [];
  while (i < argv.length && (argv[i] ?? "").startsWith("-")) {
    const f = (argv[i] ?? "").split("=")[0] ?? "";
    if (!globalsOk.has(f)) errs.push(`unknown global ${f}`);
    i += valued.has(f) && !(argv[i] ?? "").includes("=") ? 2 : 1;
  }
  const cmd = argv[i];
  if (cmd === undefined) return errs;
  if (!code.get("")!.subcommands.has(cmd)) return [...errs, `unknown command ${cmd}`];
  let key = cmd;
  let allowed = new Set([...code.get("")!.flags]);
  const rest = argv.slice(i + 1);
  if (cmd === "v3") {
    let sub: string | undefined;
    for (let j = 0; j < rest.length && sub === undefined; j++) {
      const w = rest[j] ?? "";
      if (!w.startsWith("-")) sub = w;
      else if (valued.has(w) && !w.includes("=")) j++;
    }
    const c = sub === undefined ? undefined : v3Commands.find((v) => v.name === sub || (v.aliases ?? []).includes(sub));
    if (c === undefined) return [...errs, `unknown v3 command ${sub ?? ""}`];
    key = `v3 ${c.name}`;
    allowed = new Set([...code.get("v3")!.flags, ...code.get(key)!.flags]);
  } else {
    for (const f of code.get(key)?.flags ?? []) allowed.add(f);
  }
  for (const w of rest) {
    if (w === "--") break;
    if (!/^--?[A-Za-z]/.test(w)) continue;
    const f = w.split("=")[0] ?? "";
    if (!allowed.has(f)) errs.push(`${key} has no ${f}`);
  }
  return errs;
}

test("--help lists every command, and kvctl v3 --help only etcdctl v3's flags", async () => {
  const top = await helpText([]);
  const listed = (help: string, prefix: string): string[] =>
    [...help.matchAll(new RegExp(`^  ${prefix} ([\\w-]+)`, "gm"))].map((m) => m[1] ?? "");
  assert.deepEqual(new Set(listed(top, "kvctl")), new Set(commands.map((c) => c.name)));
  const v3 = await helpText(["v3"]);
  assert.deepEqual(new Set(listed(v3, "kvctl v3")), new Set(v3Commands.map((c) => c.name)));
  const options = v3.slice(v3.indexOf("Options:"));
  const offered = new Set(options.split("\n").flatMap((l) => flagTokens(l.trimStart().replace(/ {2}\S.*$/, ""))));
  assert.deepEqual(
    [...offered].filter((f) => !code.get("v3")!.flags.has(f) && f !== "--help" && f !== "-h"),
    [],
    "v3 help offers flags the v3 parser refuses",
  );
  assert.deepEqual([...code.get("v3")!.flags].filter((f) => !offered.has(f)), [], "v3 help lacks flags");
});

test("kvctl serve --help lists every serve flag", () => {
  const help = serveHelp();
  assert.deepEqual(
    [...code.get("serve")!.flags].filter((f) => !new RegExp(`^  (.*, )?${f}\\b`, "m").test(help)),
    [],
  );
});

// A self-check of the readers: a document that lost a flag is reported.
test("the readers report a flag a document lost", () => {
  const bash = read("completions/kvctl.bash").replace(" --swap-with-index", "");
  assert.deepEqual(drift(bashInventory(bash), { subcommands: true }), ["set: missing flags --swap-with-index"]);
  const fish = read("completions/kvctl.fish").replace(/^.* -l after-index .*$/m, "");
  assert.deepEqual(drift(fishInventory(fish), { subcommands: true }), [
    "watch: missing flags --after-index",
    "exec-watch: missing flags --after-index",
  ]);
  const zsh = read("completions/_kvctl").replace("'--physical[wait for the physical compaction]'", "");
  assert.deepEqual(drift(zshInventory(zsh), { subcommands: true }), ["v3 compaction: missing flags --physical"]);
  const lostLearner = man.replace("[\\fB\\-\\-learner\\fR]", "");
  assert.deepEqual(drift(manInventory(lostLearner), { subcommands: true }), ["v3 member: missing flags --learner"]);
});

