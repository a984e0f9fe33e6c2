// etcdctl v3's printers for leases, users and roles. Lease responses are clientv3's own
// structs in JSON (the header embedded flat, `ID`/`TTL` or `id`/`ttl`/`granted-ttl`);
// user and role responses are the protobuf structs. Pure functions.

import { unb64, type WireHeaderResponse, type WireLeaseGrantResponse, type WireLeaseKeepAliveResponse, type WireLeaseLeasesResponse, type WireLeaseTimeToLiveResponse, type WirePermission, type WireRoleGetResponse, type WireRoleListResponse, type WireUserGetResponse, type WireUserListResponse } from "../../../client/v3-types.ts";
import { goJsonString, goQuote, leaseHex } from "./go-format.ts";
import { fieldsHeader, headerFields, jsonBytes, jsonHeader, jsonInt, jsonObject, n, render, UnsupportedFormatError, type PrintOptions, type Printed } from "./printers.ts";
import { headerText, protobufBareHeader, protobufHeaderOnly, protobufRoleGet, protobufStrings } from "./printers-protobuf.ts";

const jsonStrings = (list: string[] | undefined): string | undefined =>
  list === undefined || list.length === 0 ? undefined : `[${list.map(goJsonString).join(",")}]`;
const headerOnly = (r: WireHeaderResponse): string => jsonObject([["header", jsonHeader(r.header)]]);
const fieldsHeaderOnly = (r: WireHeaderResponse): string => fieldsHeader(r.header);

// ---- leases ----

export const printGrant = (r: WireLeaseGrantResponse, o: PrintOptions): Printed =>
  render(r, o, {
    simple: () => `lease ${leaseHex(n(r.ID))} granted with TTL(${n(r.TTL)}s)\n`,
    json: () => jsonObject([...headerFields(r.header), ["ID", n(r.ID)], ["TTL", n(r.TTL)], ["Error", goJsonString(r.error ?? "")]]),
    fields: () => `${fieldsHeader(r.header)}"ID" : ${n(r.ID)}\n"TTL" : ${n(r.TTL)}\n`,
    protobuf: protobufBareHeader,
  });

export const printRevoke = (id: string, r: WireHeaderResponse, o: PrintOptions): Printed =>
  render(r, o, {
    simple: () => `lease ${leaseHex(id)} revoked\n`,
    json: headerOnly,
    fields: fieldsHeaderOnly,
    // clientv3.LeaseRevokeResponse is a defined type with no Marshal: etcdctl refuses it.
    protobuf: () => {
      throw new UnsupportedFormatError("protobuf", `marshal unsupported for type clientv3.LeaseRevokeResponse ({${headerText(r.header)}})`);
    },
  });

export const printKeepAlive = (r: WireLeaseKeepAliveResponse, o: PrintOptions): Printed =>
  render(r, o, {
    simple: () => `lease ${leaseHex(n(r.ID))} keepalived with TTL(${n(r.TTL)})\n`,
    json: () => jsonObject([...headerFields(r.header), ["ID", n(r.ID)], ["TTL", n(r.TTL)]]),
    fields: () => `${fieldsHeader(r.header)}"ID" : ${n(r.ID)}\n"TTL" : ${n(r.TTL)}\n`,
    protobuf: protobufBareHeader,
  });

export function printTimeToLive(r: WireLeaseTimeToLiveResponse, keys: boolean, o: PrintOptions): Printed {
  const simple = (): string => {
    if (n(r.grantedTTL) === "0" && n(r.TTL) === "-1") return `lease ${leaseHex(n(r.ID))} already expired\n`;
    let txt = `lease ${leaseHex(n(r.ID))} granted with TTL(${n(r.grantedTTL)}s), remaining(${n(r.TTL)}s)`;
    if (keys) txt += `, attached keys([${(r.keys ?? []).map((k) => unb64(k).toString("utf8")).join(" ")}])`;
    return `${txt}\n`;
  };
  return render(r, o, {
    simple,
    json: () =>
      jsonObject([
        ...headerFields(r.header),
        ["id", n(r.ID)],
        ["ttl", n(r.TTL)],
        ["granted-ttl", n(r.grantedTTL)],
        ["keys", r.keys === undefined || r.keys.length === 0 ? "null" : `[${r.keys.map((k) => `"${k}"`).join(",")}]`],
      ]),
    fields: () =>
      `${fieldsHeader(r.header)}"ID" : ${n(r.ID)}\n"TTL" : ${n(r.TTL)}\n"GrantedTTL" : ${n(r.grantedTTL)}\n` +
      (r.keys ?? []).map((k) => `"Key" : ${goQuote(unb64(k))}\n`).join(""),
    protobuf: protobufBareHeader,
  });
}

export const printLeases = (r: WireLeaseLeasesResponse, o: PrintOptions): Printed =>
  render(r, o, {
    simple: () => `found ${(r.leases ?? []).length} leases\n${(r.leases ?? []).map((l) => `${leaseHex(n(l.ID))}\n`).join("")}`,
    json: () => jsonObject([...headerFields(r.header), ["leases", `[${(r.leases ?? []).map((l) => `{"id":${n(l.ID)}}`).join(",")}]`]]),
    fields: () => `${fieldsHeader(r.header)}${(r.leases ?? []).map((l) => `"ID" : ${n(l.ID)}\n`).join("")}`,
    protobuf: protobufBareHeader,
  });

// ---- users ----

/** Responses printed as one line in simple format and as the bare header otherwise. */
export const printHeaderOnly = (line: string, r: WireHeaderResponse, o: PrintOptions): Printed =>
  render(r, o, { simple: () => `${line}\n`, json: headerOnly, fields: fieldsHeaderOnly, protobuf: protobufHeaderOnly });

export const printUserGet = (name: string, r: WireUserGetResponse, o: PrintOptions): Printed =>
  render(r, o, {
    simple: () => `User: ${name}\nRoles:${(r.roles ?? []).map((x) => ` ${x}`).join("")}\n`,
    json: () => jsonObject([["header", jsonHeader(r.header)], ["roles", jsonStrings(r.roles)]]),
    protobuf: () => protobufStrings(r, r.roles),
  });

export const printUserList = (r: WireUserListResponse, o: PrintOptions): Printed =>
  render(r, o, {
    simple: () => (r.users ?? []).map((u) => `${u}\n`).join(""),
    json: () => jsonObject([["header", jsonHeader(r.header)], ["users", jsonStrings(r.users)]]),
    protobuf: () => protobufStrings(r, r.users),
  });

// ---- roles ----

const permNumber = (p: WirePermission): number => (p.permType === "WRITE" || p.permType === 1 ? 1 : p.permType === "READWRITE" || p.permType === 2 ? 2 : 0);
const permName = (p: WirePermission): string => ["READ", "WRITE", "READWRITE"][permNumber(p)] ?? "READ";

/** clientv3.GetPrefixRangeEnd: the key with its last non-0xff byte incremented. */
export function prefixRangeEnd(key: Buffer): Buffer {
  const end = Buffer.from(key);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] ?? 0) < 0xff) {
      end[i] = (end[i] ?? 0) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

function simpleRoleGet(role: string, r: WireRoleGetResponse): string {
  const range = (p: WirePermission): string => {
    const key = unb64(p.key);
    const end = unb64(p.range_end);
    if (end.length === 0) return `\t${key.toString("utf8")}\n`;
    let s = end.equals(Buffer.from([0])) ? `\t[${key.toString("utf8")}, <open ended>` : `\t[${key.toString("utf8")}, ${end.toString("utf8")})`;
    if (prefixRangeEnd(key).equals(end)) s += ` (prefix ${key.toString("utf8")})`;
    return `${s}\n`;
  };
  const perms = r.perm ?? [];
  return (
    `Role ${role}\nKV Read:\n${perms.filter((p) => permNumber(p) !== 1).map(range).join("")}` +
    `KV Write:\n${perms.filter((p) => permNumber(p) !== 0).map(range).join("")}`
  );
}

export const printRoleGet = (role: string, r: WireRoleGetResponse, o: PrintOptions): Printed =>
  render(r, o, {
    simple: () => simpleRoleGet(role, r),
    json: () =>
      jsonObject([
        ["header", jsonHeader(r.header)],
        [
          "perm",
          r.perm === undefined || r.perm.length === 0
            ? undefined
            : `[${r.perm.map((p) => jsonObject([["permType", jsonInt(permNumber(p))], ["key", jsonBytes(p.key)], ["range_end", jsonBytes(p.range_end)]])).join(",")}]`,
        ],
      ]),
    fields: () =>
      fieldsHeader(r.header) +
      (r.perm ?? [])
        .map((p) => `"PermType" :  ${permName(p)}\n"Key" : ${goQuote(unb64(p.key))}\n"RangeEnd" : ${goQuote(unb64(p.range_end))}\n`)
        .join(""),
    protobuf: () => protobufRoleGet(r, permNumber),
  });

export const printRoleList = (r: WireRoleListResponse, o: PrintOptions): Printed =>
  render(r, o, {
    simple: () => (r.roles ?? []).map((x) => `${x}\n`).join(""),
    json: () => jsonObject([["header", jsonHeader(r.header)], ["roles", jsonStrings(r.roles)]]),
    fields: () => `${fieldsHeader(r.header)}"Roles" :${(r.roles ?? []).map((x) => ` ${goQuote(Buffer.from(x))}`).join("")}\n`,
    protobuf: () => protobufStrings(r, r.roles),
  });

/** role revoke-permission's line: a key, a range, or an open-ended range. */
export function revokePermissionLine(role: string, key: string, end: string): string {
  if (end === "") return `Permission of key ${key} is revoked from role ${role}`;
  if (end !== "\x00") return `Permission of range [${key}, ${end}) is revoked from role ${role}`;
  return `Permission of range [${key}, <open ended> is revoked from role ${role}`;
}
