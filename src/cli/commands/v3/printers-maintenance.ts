// etcdctl v3's printers for `alarm list|disarm` and `snapshot status` (printer_*.go's Alarm
// and DBStatus), and go-humanize's Bytes, which etcdctl uses for sizes. Pure functions.

import type { WireHeader, WireInt } from "../../../client/v3-types.ts";
import { formatTable } from "../endpoint.ts";
import { fieldsHeader, jsonHeader, jsonInt, jsonObject, n, render, type PrintOptions, type Printed } from "./printers.ts";
import { protobufAlarms } from "./printers-protobuf.ts";

/** etcdserverpb.AlarmType, as the gateway names it (or numbers it). */
export const alarmNames = ["NONE", "NOSPACE", "CORRUPT"] as const;

export interface WireAlarmMember {
  memberID?: WireInt;
  alarm?: string | number;
}

/** AlarmResponse: etcd's gateway answers it without a header; clientv3's disarm-all has none either. */
export interface WireAlarmResponse {
  header?: WireHeader;
  alarms?: WireAlarmMember[];
}

export function alarmNumber(a: WireAlarmMember): number {
  if (typeof a.alarm === "number") return a.alarm;
  const i = (alarmNames as readonly string[]).indexOf(a.alarm ?? "NONE");
  return i === -1 ? 0 : i;
}

const alarmName = (a: WireAlarmMember): string => alarmNames[alarmNumber(a)] ?? String(alarmNumber(a));

/**
 * `%+v` of a *pb.AlarmMember is gogoproto's compact text: each non-zero field as
 * `name:value` followed by a space (hence the trailing space before the newline).
 */
function simpleAlarm(a: WireAlarmMember): string {
  let line = "";
  if (n(a.memberID) !== "0") line += `memberID:${n(a.memberID)} `;
  if (alarmNumber(a) !== 0) line += `alarm:${alarmName(a)} `;
  return `${line}\n`;
}

export const printAlarms = (r: WireAlarmResponse, o: PrintOptions): Printed =>
  render(r, o, {
    simple: () => (r.alarms ?? []).map(simpleAlarm).join(""),
    json: () =>
      jsonObject([
        ["header", jsonHeader(r.header)],
        [
          "alarms",
          r.alarms === undefined || r.alarms.length === 0
            ? undefined
            : `[${r.alarms.map((a) => jsonObject([["memberID", jsonInt(a.memberID)], ["alarm", jsonInt(alarmNumber(a))]])).join(",")}]`,
        ],
      ]),
    // etcdctl 3.4 dereferences the absent header here and panics; kvctl prints zeros.
    fields: () => fieldsHeader(r.header) + (r.alarms ?? []).map((a) => `"MemberID" : ${n(a.memberID)}\n"AlarmType" : ${alarmName(a)}\n`).join(""),
    protobuf: () => protobufAlarms(r, alarmNumber),
  });

/** snapshot.Status: `hash` is a uint32, `totalSize` the database's bytes (without the sha256). */
export interface DbStatus {
  hash: number;
  revision: number;
  totalKey: number;
  totalSize: number;
}

/** Go's %.0f: round half to even (JS's toFixed rounds ties up). */
function goFixed0(v: number): string {
  const floor = Math.floor(v);
  const frac = v - floor;
  if (frac === 0.5) return String(floor % 2 === 0 ? floor : floor + 1);
  return v.toFixed(0);
}

/** go-humanize's Bytes: SI units (base 1000), one decimal below 10 ("2.1 MB", "20 kB", "9 B"). */
export function humanizeBytes(size: number): string {
  if (size < 10) return `${size} B`;
  const sizes = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
  const e = Math.floor(Math.log(size) / Math.log(1000));
  const suffix = sizes[e] ?? "EB";
  const val = Math.floor((size / Math.pow(1000, e)) * 10 + 0.5) / 10;
  return val < 10 ? `${val.toFixed(1)} ${suffix}` : `${goFixed0(val)} ${suffix}`;
}

const dbStatusRow = (s: DbStatus): string[] => [(s.hash >>> 0).toString(16), String(s.revision), String(s.totalKey), humanizeBytes(s.totalSize)];

export function printDbStatus(s: DbStatus, o: PrintOptions): Printed {
  if (o.format === "table") return formatTable(["hash", "revision", "total keys", "total size"], [dbStatusRow(s)]);
  return render(s, o, {
    simple: () => `${dbStatusRow(s).join(", ")}\n`,
    json: () => `{"hash":${s.hash >>> 0},"revision":${s.revision},"totalKey":${s.totalKey},"totalSize":${s.totalSize}}`,
    fields: () => `"Hash" : ${s.hash >>> 0}\n"Revision" : ${s.revision}\n"Keys" : ${s.totalKey}\n"Size" : ${s.totalSize}\n`,
  });
}
