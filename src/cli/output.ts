// Printers for the three output formats, byte-compatible with etcdctl v2
// (ctlv2/command/format.go, ls_command.go). Pure: they return text; the caller writes it.
// Colour comes in as a Paint so that chalk is loaded only when a terminal will see it.

import type { V2NodeJSON, V2ResponseJSON } from "../api/v2-types.ts";

export const outputFormats = ["simple", "extended", "json"] as const;

/** What a printer produced: stdout text and stderr text (either may be ""). */
export interface Printed {
  stdout: string;
  stderr: string;
}

/** The response plus the X-Kv-Index it came with (extended output prints it). */
export interface PrintableResult {
  response: V2ResponseJSON & { node: V2NodeJSON };
  index: number;
}

/** etcdctl's printResponseKey. */
export function formatResponse(result: PrintableResult, format: string): Printed {
  const { response, index } = result;
  const node = response.node;
  switch (format) {
    case "simple":
      return {
        stdout:
          response.action !== "delete"
            ? `${node.value ?? ""}\n`
            : `PrevNode.Value: ${response.prevNode?.value ?? ""}\n`,
        stderr: "",
      };
    case "extended": {
      let out = `Key: ${node.key ?? ""}\nCreated-Index: ${node.createdIndex ?? 0}\nModified-Index: ${node.modifiedIndex ?? 0}\n`;
      if (response.prevNode !== undefined) out += `PrevNode.Value: ${response.prevNode.value ?? ""}\n`;
      out += `TTL: ${node.ttl ?? 0}\nIndex: ${index}\n`;
      if (response.action !== "delete") out += `\n${node.value ?? ""}\n`;
      return { stdout: out, stderr: "" };
    }
    case "json":
      return { stdout: `${goJsonResponse(response)}\n`, stderr: "" };
    default:
      return { stdout: "", stderr: `Unsupported output format: ${format}\n` };
  }
}

/**
 * The response as etcdctl re-marshals it with Go's encoding/json: every field of its
 * Response/Node structs in struct order, `null` for absent nodes, HTML-safe escapes.
 */
export function goJsonResponse(r: V2ResponseJSON): string {
  return `{"action":${goString(r.action)},"node":${goJsonNode(r.node)},"prevNode":${goJsonNode(r.prevNode)}}`;
}

function goJsonNode(n: V2NodeJSON | undefined): string {
  if (n === undefined || n === null) return "null";
  let s = `{"key":${goString(n.key ?? "")}`;
  if (n.dir === true) s += `,"dir":true`;
  s += `,"value":${goString(n.value ?? "")}`;
  s += `,"nodes":${Array.isArray(n.nodes) ? `[${n.nodes.map(goJsonNode).join(",")}]` : "null"}`;
  s += `,"createdIndex":${n.createdIndex ?? 0},"modifiedIndex":${n.modifiedIndex ?? 0}`;
  if (n.expiration !== undefined && n.expiration !== null) s += `,"expiration":${goString(n.expiration)}`;
  if (n.ttl !== undefined && n.ttl !== 0) s += `,"ttl":${n.ttl}`;
  return `${s}}`;
}

/** A JSON string as Go's encoding/json writes it (escapes <, >, &, U+2028/9, \b, \f). */
export function goString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || ch === "<" || ch === ">" || ch === "&" || c === 0x2028 || c === 0x2029) {
      out += `\\u${c.toString(16).padStart(4, "0")}`;
    } else if (c >= 0xd800 && c <= 0xdfff) out += "\\ufffd"; // a lone surrogate: Go writes U+FFFD
    else out += ch;
  }
  return `${out}"`;
}

/** Colours for terminal output; `plainPaint` is the identity. */
export interface Paint {
  dir(text: string): string;
  key(text: string): string;
  branch(text: string): string;
}

export const plainPaint: Paint = { dir: (t) => t, key: (t) => t, branch: (t) => t };

export interface LsOptions {
  format: string;
  /** -p: append `/` to directories. */
  slash: boolean;
  paint?: Paint;
}

/** etcdctl's printLs: the keys one a line (simple), or the response in another format. */
export function formatLs(result: PrintableResult, opts: LsOptions): Printed {
  if (opts.format !== "simple") return formatResponse(result, opts.format);
  const paint = opts.paint ?? plainPaint;
  const lines: string[] = [];
  const node = result.response.node;
  if (node.dir !== true) lines.push(paint.key(node.key ?? ""));
  const walk = (n: V2NodeJSON): void => {
    const key = n.key ?? "";
    lines.push(n.dir === true ? paint.dir(opts.slash ? `${key}/` : key) : paint.key(key));
    for (const child of n.nodes ?? []) walk(child);
  };
  for (const child of node.nodes ?? []) walk(child);
  return { stdout: lines.map((l) => `${l}\n`).join(""), stderr: "" };
}

/**
 * `ls -r` on a terminal: the same keys drawn as a tree, children named by their last
 * path segment. Never used for piped output (scripts get formatLs).
 */
export function formatLsTree(result: PrintableResult, opts: { slash: boolean; paint: Paint }): string {
  const { paint } = opts;
  const root = result.response.node;
  const label = (n: V2NodeJSON, name: string): string =>
    n.dir === true ? paint.dir(opts.slash ? `${name}/` : name) : paint.key(name);
  const lines = [label(root, root.key ?? "/")];
  const walk = (unsorted: readonly V2NodeJSON[], indent: string): void => {
    // A tree is read by people: siblings in key order, whatever order the server used.
    const nodes = [...unsorted].sort((a, b) => ((a.key ?? "") < (b.key ?? "") ? -1 : (a.key ?? "") > (b.key ?? "") ? 1 : 0));
    nodes.forEach((n, i) => {
      const last = i === nodes.length - 1;
      const name = (n.key ?? "").split("/").pop() ?? "";
      lines.push(`${paint.branch(indent + (last ? "└── " : "├── "))}${label(n, name)}`);
      walk(n.nodes ?? [], indent + (last ? "    " : "│   "));
    });
  };
  walk(root.nodes ?? [], "");
  return lines.map((l) => `${l}\n`).join("");
}

/** One watch event: `[action] key` first when watching recursively, then the response. */
export function formatWatchEvent(result: PrintableResult, opts: { format: string; recursive: boolean }): Printed {
  const printed = formatResponse(result, opts.format);
  if (!opts.recursive) return printed;
  return { stdout: `[${result.response.action}] ${result.response.node.key ?? ""}\n${printed.stdout}`, stderr: printed.stderr };
}

export interface MemberLine {
  id: string;
  name: string;
  peerURLs: readonly string[];
  clientURLs: readonly string[];
}

/** etcdctl member list: one member a line; a member not started yet has no name. */
export function formatMemberList(members: readonly MemberLine[], leaderId: string): string {
  return members
    .map((m) =>
      m.name === ""
        ? `${m.id}[unstarted]: peerURLs=${m.peerURLs.join(",")}\n`
        : `${m.id}: name=${m.name} peerURLs=${m.peerURLs.join(",")} clientURLs=${m.clientURLs.join(",")} isLeader=${m.id === leaderId}\n`,
    )
    .join("");
}

/** Stats documents, indented for people (key order as the server sent it). */
export function formatPrettyJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
