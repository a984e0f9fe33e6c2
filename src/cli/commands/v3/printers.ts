// etcdctl v3's printers for the key-value responses (printer_simple.go, printer_fields.go,
// printer_json.go): pure functions from the gateway's answer to the exact text etcdctl
// prints. JSON is Go's encoding/json of the protobuf structs: snake_case names,
// omitempty, int64s as numbers (printed from the gateway's decimal strings, so 64-bit
// IDs keep every digit), bytes as base64.

import { unb64, type WireDeleteRangeResponse, type WireEvent, type WireHeader, type WireInt, type WireKeyValue, type WirePutResponse, type WireRangeResponse, type WireTxnResponse, type WireWatchResponse } from "../../../client/v3-types.ts";
import { goQuote, hexBytes } from "./go-format.ts";
import { protobufDel, protobufPut, protobufRange, protobufTxn, protobufWatch } from "./printers-protobuf.ts";

/** etcdctl's ExitBadFeature (4): the format exists but this command cannot print it. */
export class UnsupportedFormatError extends Error {
  readonly exitCode = 4;
  /** `message` replaces etcdctl's usual text (protobuf's "marshal unsupported for type …"). */
  constructor(format: string, message?: string) {
    super(message ?? `${format} not supported as output format`);
    this.name = "UnsupportedFormatError";
  }
}

export const outputFormats = ["simple", "json", "fields", "protobuf", "table"] as const;

export interface PrintOptions {
  format: string;
  hex: boolean;
  /** get --print-value-only. */
  valueOnly?: boolean;
}

/** A wire int as Go prints it (%d): "0" when absent. */
export function n(v: WireInt | undefined): string {
  return v === undefined || v === "" ? "0" : String(v);
}

const isZero = (v: WireInt | undefined): boolean => v === undefined || v === "" || v === "0" || v === 0;

/** A JSON object from [name, rendered value | undefined] pairs; undefined = omitted. */
export function jsonObject(fields: readonly (readonly [string, string | undefined])[]): string {
  return `{${fields.filter(([, v]) => v !== undefined).map(([k, v]) => `"${k}":${v}`).join(",")}}`;
}

export const jsonInt = (v: WireInt | undefined): string | undefined => (isZero(v) ? undefined : String(v));
export const jsonBytes = (v: string | undefined): string | undefined => (v === undefined || v === "" ? undefined : `"${v}"`);

/** The header's fields (omitempty), for embedding flat (lease responses) or nested. */
export function headerFields(h: WireHeader | undefined): [string, string | undefined][] {
  return [
    ["cluster_id", jsonInt(h?.cluster_id)],
    ["member_id", jsonInt(h?.member_id)],
    ["revision", jsonInt(h?.revision)],
    ["raft_term", jsonInt(h?.raft_term)],
  ];
}

export const jsonHeader = (h: WireHeader | undefined): string | undefined => (h === undefined ? undefined : jsonObject(headerFields(h)));

export function jsonKv(kv: WireKeyValue): string {
  return jsonObject([
    ["key", jsonBytes(kv.key)],
    ["create_revision", jsonInt(kv.create_revision)],
    ["mod_revision", jsonInt(kv.mod_revision)],
    ["version", jsonInt(kv.version)],
    ["value", jsonBytes(kv.value)],
    ["lease", jsonInt(kv.lease)],
  ]);
}

const jsonKvs = (kvs: WireKeyValue[] | undefined): string | undefined =>
  kvs === undefined || kvs.length === 0 ? undefined : `[${kvs.map(jsonKv).join(",")}]`;

export const jsonRange = (r: WireRangeResponse): string =>
  jsonObject([["header", jsonHeader(r.header)], ["kvs", jsonKvs(r.kvs)], ["more", r.more === true ? "true" : undefined], ["count", jsonInt(r.count)]]);
export const jsonPut = (r: WirePutResponse): string =>
  jsonObject([["header", jsonHeader(r.header)], ["prev_kv", r.prev_kv === undefined ? undefined : jsonKv(r.prev_kv)]]);
export const jsonDel = (r: WireDeleteRangeResponse): string =>
  jsonObject([["header", jsonHeader(r.header)], ["deleted", jsonInt(r.deleted)], ["prev_kvs", jsonKvs(r.prev_kvs)]]);

export function jsonTxn(r: WireTxnResponse): string {
  const responses = (r.responses ?? []).map((op) => {
    // The oneof is Go's wrapper struct: {"Response":{"ResponsePut":{…}}}.
    if (op.response_put !== undefined) return `{"Response":{"ResponsePut":${jsonPut(op.response_put)}}}`;
    if (op.response_range !== undefined) return `{"Response":{"ResponseRange":${jsonRange(op.response_range)}}}`;
    if (op.response_delete_range !== undefined) return `{"Response":{"ResponseDeleteRange":${jsonDel(op.response_delete_range)}}}`;
    if (op.response_txn !== undefined) return `{"Response":{"ResponseTxn":${jsonTxn(op.response_txn)}}}`;
    return "{}";
  });
  return jsonObject([
    ["header", jsonHeader(r.header)],
    ["succeeded", r.succeeded === true ? "true" : undefined],
    ["responses", responses.length === 0 ? undefined : `[${responses.join(",")}]`],
  ]);
}

const eventType = (e: WireEvent): number => (e.type === "DELETE" || e.type === 1 ? 1 : 0);

/** clientv3.WatchResponse: Header and the flags are not omitempty. */
export function jsonWatch(r: WireWatchResponse): string {
  const events = (r.events ?? []).map((e) =>
    jsonObject([
      ["type", eventType(e) === 0 ? undefined : String(eventType(e))],
      ["kv", e.kv === undefined ? undefined : jsonKv(e.kv)],
      ["prev_kv", e.prev_kv === undefined ? undefined : jsonKv(e.prev_kv)],
    ]),
  );
  return jsonObject([
    ["Header", jsonObject(headerFields(r.header))],
    ["Events", `[${events.join(",")}]`],
    ["CompactRevision", n(r.compact_revision)],
    ["Canceled", r.canceled === true ? "true" : "false"],
    ["Created", r.created === true ? "true" : "false"],
  ]);
}

// ---- simple ----

function simpleKv(kv: WireKeyValue, o: PrintOptions): string {
  const key = unb64(kv.key);
  const value = unb64(kv.value);
  const k = o.hex ? hexBytes(key) : key.toString("utf8");
  const v = o.hex ? hexBytes(value) : value.toString("utf8");
  return o.valueOnly === true ? `${v}\n` : `${k}\n${v}\n`;
}

const simpleGet = (r: WireRangeResponse, o: PrintOptions): string => (r.kvs ?? []).map((kv) => simpleKv(kv, o)).join("");
const simplePut = (r: WirePutResponse, o: PrintOptions): string => `OK\n${r.prev_kv === undefined ? "" : simpleKv(r.prev_kv, o)}`;
const simpleDel = (r: WireDeleteRangeResponse, o: PrintOptions): string =>
  `${n(r.deleted)}\n${(r.prev_kvs ?? []).map((kv) => simpleKv(kv, o)).join("")}`;

function simpleTxn(r: WireTxnResponse, o: PrintOptions): string {
  let out = r.succeeded === true ? "SUCCESS\n" : "FAILURE\n";
  for (const op of r.responses ?? []) {
    out += "\n";
    if (op.response_delete_range !== undefined) out += simpleDel(op.response_delete_range, o);
    else if (op.response_put !== undefined) out += simplePut(op.response_put, o);
    else if (op.response_range !== undefined) out += simpleGet(op.response_range, o);
    else out += `unexpected response ${JSON.stringify(op)}\n`;
  }
  return out;
}

function simpleWatch(r: WireWatchResponse, o: PrintOptions): string {
  let out = "";
  for (const e of r.events ?? []) {
    out += eventType(e) === 1 ? "DELETE\n" : "PUT\n";
    if (e.prev_kv !== undefined) out += simpleKv(e.prev_kv, o);
    out += simpleKv(e.kv ?? {}, o);
  }
  return out;
}

// ---- fields ----

export function fieldsHeader(h: WireHeader | undefined): string {
  return `"ClusterID" : ${n(h?.cluster_id)}\n"MemberID" : ${n(h?.member_id)}\n"Revision" : ${n(h?.revision)}\n"RaftTerm" : ${n(h?.raft_term)}\n`;
}

function fieldsKv(pfx: string, kv: WireKeyValue): string {
  return (
    `"${pfx}Key" : ${goQuote(unb64(kv.key))}\n"${pfx}CreateRevision" : ${n(kv.create_revision)}\n` +
    `"${pfx}ModRevision" : ${n(kv.mod_revision)}\n"${pfx}Version" : ${n(kv.version)}\n` +
    `"${pfx}Value" : ${goQuote(unb64(kv.value))}\n"${pfx}Lease" : ${n(kv.lease)}\n`
  );
}

const fieldsGet = (r: WireRangeResponse): string =>
  `${fieldsHeader(r.header)}${(r.kvs ?? []).map((kv) => fieldsKv("", kv)).join("")}"More" : ${r.more === true}\n"Count" : ${n(r.count)}\n`;
const fieldsPut = (r: WirePutResponse): string => `${fieldsHeader(r.header)}${r.prev_kv === undefined ? "" : fieldsKv("Prev", r.prev_kv)}`;
const fieldsDel = (r: WireDeleteRangeResponse): string =>
  `${fieldsHeader(r.header)}"Deleted" : ${n(r.deleted)}\n${(r.prev_kvs ?? []).map((kv) => fieldsKv("Prev", kv)).join("")}`;

function fieldsTxn(r: WireTxnResponse): string {
  let out = `${fieldsHeader(r.header)}"Succeeded" : ${r.succeeded === true}\n`;
  for (const op of r.responses ?? []) {
    if (op.response_delete_range !== undefined) out += fieldsDel(op.response_delete_range);
    else if (op.response_put !== undefined) out += fieldsPut(op.response_put);
    else if (op.response_range !== undefined) out += fieldsGet(op.response_range);
    else out += `"Unknown" : ${goQuote(Buffer.from(JSON.stringify(op)))}\n`;
  }
  return out;
}

function fieldsWatch(r: WireWatchResponse): string {
  let out = fieldsHeader(r.header);
  for (const e of r.events ?? []) {
    out += `"Type" : ${eventType(e) === 1 ? "DELETE" : "PUT"}\n`;
    if (e.prev_kv !== undefined) out += fieldsKv("Prev", e.prev_kv);
    out += fieldsKv("", e.kv ?? {});
  }
  return out;
}

// ---- dispatch ----

/** What a printer gives: text, or a protobuf message's raw bytes (-w protobuf). */
export type Printed = string | Buffer;

interface Renderers<T> {
  simple(r: T, o: PrintOptions): string;
  json?(r: T): string;
  fields?(r: T): string;
  protobuf?(r: T): Buffer;
}

/** Renders with the chosen format; table is not supported by these commands. */
export function render<T>(r: T, o: PrintOptions, how: Renderers<T>): Printed {
  switch (o.format) {
    case "simple":
      return how.simple(r, o);
    case "json":
      if (how.json === undefined) throw new UnsupportedFormatError("json");
      return `${how.json(r)}\n`;
    case "fields":
      if (how.fields === undefined) throw new UnsupportedFormatError("fields");
      return how.fields(r);
    case "protobuf":
      if (how.protobuf === undefined) throw new UnsupportedFormatError("protobuf");
      return how.protobuf(r);
    default:
      throw new UnsupportedFormatError(o.format);
  }
}

export const printGet = (r: WireRangeResponse, o: PrintOptions): Printed => render(r, o, { simple: simpleGet, json: jsonRange, fields: fieldsGet, protobuf: protobufRange });
export const printPut = (r: WirePutResponse, o: PrintOptions): Printed => render(r, o, { simple: simplePut, json: jsonPut, fields: fieldsPut, protobuf: protobufPut });
export const printDel = (r: WireDeleteRangeResponse, o: PrintOptions): Printed => render(r, o, { simple: simpleDel, json: jsonDel, fields: fieldsDel, protobuf: protobufDel });
export const printTxn = (r: WireTxnResponse, o: PrintOptions): Printed => render(r, o, { simple: simpleTxn, json: jsonTxn, fields: fieldsTxn, protobuf: protobufTxn });
export const printWatch = (r: WireWatchResponse, o: PrintOptions): Printed => render(r, o, { simple: simpleWatch, json: jsonWatch, fields: fieldsWatch, protobuf: protobufWatch });
