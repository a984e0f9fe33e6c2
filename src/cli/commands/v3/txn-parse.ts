// Reading a transaction, in either of two forms:
//
// 1. etcdctl's line format (txn_command.go): compares, a blank line, success requests, a
//    blank line, failure requests, a blank line. A compare is `target("key") op "value"`
//    with target ver|version, c|create, m|mod, val|value or lease (lease IDs in hex) and
//    op one of = != > <; a request is a `get`, `put` or `del` command line with its
//    flags (`put k v --prev-kv`, `get --prefix a`), words split as a shell would and
//    "double-quoted" words unquoted Go style.
// 2. JSON: exactly the body of the gateway's POST /v3/kv/txn (etcdserverpb.TxnRequest
//    in jsonpb): {"compare":[{"key":"<base64>","target":"MOD","result":"GREATER",
//    "mod_revision":"0"}],"success":[{"request_put":{"key":"<base64>","value":"<base64>"}}],
//    "failure":[…]}. Bytes are base64, int64s numbers or decimal strings, enums by name.
//    Input whose first non-blank character is `{` is JSON.
//
// Pure: errors are TxnInputError (etcdctl's ExitInvalidInput, 3) with etcdctl's words.

import type { WireCompare, WireCompareResult, WireCompareTarget, WireRequestOp, WireTxnRequest } from "../../../client/v3-types.ts";
import { b64 } from "../../../client/v3-types.ts";
import { parseV3Argv, V3UsageError } from "./argv.ts";
import { parseDecInt64, parseHexInt64 } from "./go-format.ts";
import { delRequest, getRequest, putRequest } from "./kv.ts";

export class TxnInputError extends Error {
  readonly exitCode = 3;
  constructor(message: string) {
    super(message);
    this.name = "TxnInputError";
  }
}

/** Go's strconv.Unquote for a double-quoted or back-quoted word; undefined if malformed. */
export function goUnquote(word: string): string | undefined {
  if (word.length >= 2 && word.startsWith("`") && word.endsWith("`")) return word.slice(1, -1);
  if (word.length < 2 || !word.startsWith('"') || !word.endsWith('"')) return undefined;
  const body = word.slice(1, -1);
  const bytes: number[] = [];
  const simple: Readonly<Record<string, number>> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, "\\": 92, '"': 34, "'": 39 };
  for (let i = 0; i < body.length; i++) {
    const c = body[i] ?? "";
    if (c === '"') return undefined;
    if (c !== "\\") {
      bytes.push(...Buffer.from(c, "utf8"));
      continue;
    }
    const e = body[++i] ?? "";
    const s = simple[e];
    if (s !== undefined) bytes.push(s);
    else if (e === "x" && /^[0-9a-fA-F]{2}$/.test(body.slice(i + 1, i + 3))) {
      bytes.push(Number.parseInt(body.slice(i + 1, i + 3), 16));
      i += 2;
    } else if ((e === "u" || e === "U") && /^[0-9a-fA-F]+$/.test(body.slice(i + 1, i + (e === "u" ? 5 : 9)))) {
      const len = e === "u" ? 4 : 8;
      if (body.slice(i + 1, i + 1 + len).length !== len) return undefined;
      bytes.push(...Buffer.from(String.fromCodePoint(Number.parseInt(body.slice(i + 1, i + 1 + len), 16)), "utf8"));
      i += len;
    } else if (/^[0-7]{3}$/.test(body.slice(i, i + 3))) {
      bytes.push(Number.parseInt(body.slice(i, i + 3), 8));
      i += 2;
    } else return undefined;
  }
  return Buffer.from(bytes).toString("utf8");
}

/**
 * etcdctl's argify: shell-like words; "…" unquoted Go style, '…' taken literally.
 * (etcdctl mis-slices single-quoted words; kvctl strips the quotes.)
 */
export function argify(line: string): string[] {
  const words = line.match(/"(?:[^"\\]|\\.)*"|'[^']*'|[^'"\s]\S*[^'"\s]?/g) ?? [];
  return words.map((w) => {
    if (w.startsWith("'")) return w.slice(1, -1);
    if (w.startsWith('"')) {
      const u = goUnquote(w);
      if (u === undefined) throw new TxnInputError("invalid syntax");
      return u;
    }
    return w;
  });
}

// clientv3.Compare knows these four (etcdctl panics on any other; kvctl reports it).
const results: Readonly<Record<string, WireCompareResult>> = { "=": "EQUAL", "!=": "NOT_EQUAL", ">": "GREATER", "<": "LESS" };

/** One quoted Go string at the start of `s`: [value, rest] or undefined. */
function takeQuoted(s: string): [string, string] | undefined {
  const m = /^"(?:[^"\\]|\\.)*"|^`[^`]*`/.exec(s);
  if (m === null) return undefined;
  const v = goUnquote(m[0]);
  return v === undefined ? undefined : [v, s.slice(m[0].length)];
}

/** etcdctl's parseCompare: `target("key") op "value"`. */
export function parseCompare(line: string): WireCompare {
  const paren = line.indexOf("(");
  if (paren === -1) throw new TxnInputError(`malformed comparison: ${line}`);
  const target = line.slice(0, paren);
  const rest = line.slice(paren + 1);
  const key = takeQuoted(rest);
  const m = key === undefined ? null : /^\)\s+(\S+)\s+(.*)$/.exec(key[1]);
  const val = m === null ? undefined : takeQuoted(m[2] ?? "");
  if (key === undefined || m === null || val === undefined) {
    throw new TxnInputError(`malformed comparison: ${line}; got ${target}(${JSON.stringify(key?.[0] ?? "")}) ${m?.[1] ?? ""} ""`);
  }
  const op = m[1] ?? "";
  const result = results[op];
  if (result === undefined) throw new TxnInputError(`malformed comparison: ${line} (unknown op ${op})`);
  const cmp: WireCompare = { key: b64(key[0]), result };
  const value = val[0];
  const int = (): string => {
    const v = parseDecInt64(value);
    if (!v.ok) throw new TxnInputError(`invalid txn compare request: ${line}`);
    return String(v.value);
  };
  const set = (t: WireCompareTarget, f: (c: WireCompare) => void): void => {
    cmp.target = t;
    f(cmp);
  };
  switch (target) {
    case "ver":
    case "version":
      set("VERSION", (c) => (c.version = int()));
      break;
    case "c":
    case "create":
      set("CREATE", (c) => (c.create_revision = int()));
      break;
    case "m":
    case "mod":
      set("MOD", (c) => (c.mod_revision = int()));
      break;
    case "val":
    case "value":
      set("VALUE", (c) => (c.value = b64(value)));
      break;
    case "lease": {
      // etcdctl 3.4 panics here; kvctl reads the lease ID in hex, like every other lease ID.
      const id = parseHexInt64(value);
      if (!id.ok) throw new TxnInputError(`invalid txn compare request: ${line}`);
      set("LEASE", (c) => (c.lease = id.value));
      break;
    }
    default:
      throw new TxnInputError(`malformed comparison: ${line} (unknown target ${target})`);
  }
  return cmp;
}

/** etcdctl's parseRequestUnion: a get, put or del command line. */
export function parseRequestOp(line: string): WireRequestOp {
  const args = argify(line);
  if (args.length < 2) throw new TxnInputError(`invalid txn compare request: ${line}`);
  const invalid = (): TxnInputError => new TxnInputError(`invalid txn request: ${line}`);
  try {
    // Only the command's own flags: `-w json` in a request line is an unknown flag.
    const inv = parseV3Argv(args, {}, { commandFlagsOnly: true });
    switch (inv.path[0]) {
      case "get":
        return { request_range: getRequest(inv.args, inv.flags) };
      case "put":
        return { request_put: putRequest(inv.args, inv.flags, undefined) };
      case "del":
        return { request_delete_range: delRequest(inv.args, inv.flags) };
      default:
        throw invalid();
    }
  } catch (err) {
    if (err instanceof TxnInputError) throw err;
    // A flag cobra refuses is the txn's error; a command's own argument check exits as
    // that command would (etcdctl's getPutOp: `put command needs 1 argument …`, exit 128).
    if (err instanceof V3UsageError) throw invalid();
    throw err;
  }
}

/** A source of input lines; undefined at end of input (etcdctl: `Error: EOF`). */
export type NextLine = () => Promise<string | undefined>;

/** Reads lines up to a blank one; end of input before it is etcdctl's EOF error. */
async function section<T>(next: NextLine, parse: (line: string) => T): Promise<T[]> {
  const out: T[] = [];
  for (;;) {
    const raw = await next();
    if (raw === undefined) throw new TxnInputError("EOF");
    const line = raw.trim();
    if (line === "") return out;
    out.push(parse(line));
  }
}

/** Reads the three sections, calling `prompt` before each (txn -i). */
export async function readLineTxn(next: NextLine, prompt: (text: string) => void): Promise<WireTxnRequest> {
  prompt("compares:");
  const compare = await section(next, parseCompare);
  prompt("success requests (get, put, del):");
  const success = await section(next, parseRequestOp);
  prompt("failure requests (get, put, del):");
  const failure = await section(next, parseRequestOp);
  const req: WireTxnRequest = {};
  if (compare.length > 0) req.compare = compare;
  if (success.length > 0) req.success = success;
  if (failure.length > 0) req.failure = failure;
  return req;
}

/** Line source over a whole text: a final line without "\n" counts as cut off (EOF). */
export function linesOf(text: string): NextLine {
  const parts = text.split("\n");
  let i = 0;
  return async () => (i < parts.length - 1 ? parts[i++] : undefined);
}

/** The JSON form: a TxnRequest object with only compare, success and failure. */
export function parseJsonTxn(text: string): WireTxnRequest {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new TxnInputError(`invalid txn JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new TxnInputError("invalid txn JSON: expected an object");
  for (const [k, val] of Object.entries(v)) {
    if (k !== "compare" && k !== "success" && k !== "failure") throw new TxnInputError(`invalid txn JSON: unknown field "${k}"`);
    if (!Array.isArray(val)) throw new TxnInputError(`invalid txn JSON: "${k}" must be an array`);
    for (const item of val as unknown[]) {
      if (typeof item !== "object" || item === null) throw new TxnInputError(`invalid txn JSON: "${k}" holds a non-object`);
      if (k !== "compare") {
        const ops = Object.keys(item);
        const known = ["request_range", "request_put", "request_delete_range", "request_txn"];
        if (ops.length !== 1 || !known.includes(ops[0] ?? "")) {
          throw new TxnInputError(`invalid txn JSON: each "${k}" entry needs one of ${known.join(", ")}`);
        }
      } else if (!("key" in item)) throw new TxnInputError('invalid txn JSON: a compare needs "key"');
    }
  }
  return v as WireTxnRequest;
}

export const looksLikeJson = (text: string): boolean => text.trimStart().startsWith("{");
