// Expected texts are etcdctl 3.4's output (alarm list/disarm, snapshot status) and
// go-humanize's Bytes for the same inputs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { humanizeBytes, printAlarms, printDbStatus } from "./printers-maintenance.ts";

const o = (format: string) => ({ format, hex: false });

test("humanizeBytes is go-humanize's Bytes", () => {
  const cases: [number, string][] = [
    [0, "0 B"],
    [9, "9 B"],
    [10, "10 B"],
    [999, "999 B"],
    [1000, "1.0 kB"],
    [1024, "1.0 kB"],
    [20480, "20 kB"],
    [20500, "20 kB"],
    [21500, "22 kB"],
    [2_100_000, "2.1 MB"],
    [2_149_999, "2.1 MB"],
    [10_800_000, "11 MB"],
    [2_147_483_648, "2.1 GB"],
  ];
  for (const [n, want] of cases) assert.equal(humanizeBytes(n), want, String(n));
});

test("snapshot status in every format", () => {
  const s = { hash: 1621187851, revision: 5, totalKey: 8, totalSize: 20480 };
  assert.equal(printDbStatus(s, o("simple")), "60a15d0b, 5, 8, 20 kB\n");
  assert.equal(printDbStatus(s, o("json")), '{"hash":1621187851,"revision":5,"totalKey":8,"totalSize":20480}\n');
  assert.equal(printDbStatus(s, o("fields")), '"Hash" : 1621187851\n"Revision" : 5\n"Keys" : 8\n"Size" : 20480\n');
  assert.equal(
    printDbStatus(s, o("table")),
    [
      "+----------+----------+------------+------------+",
      "|   HASH   | REVISION | TOTAL KEYS | TOTAL SIZE |",
      "+----------+----------+------------+------------+",
      "| 60a15d0b |        5 |          8 |      20 kB |",
      "+----------+----------+------------+------------+",
      "",
    ].join("\n"),
  );
  assert.throws(() => printDbStatus(s, o("protobuf")), /protobuf not supported as output format/);
});

test("alarms: gogoproto's compact text, encoding/json with enum numbers", () => {
  const r = { alarms: [{ memberID: "17227010664766480024", alarm: "NOSPACE" }] };
  assert.equal(printAlarms(r, o("simple")), "memberID:17227010664766480024 alarm:NOSPACE \n");
  assert.equal(printAlarms(r, o("json")), '{"alarms":[{"memberID":17227010664766480024,"alarm":1}]}\n');
  assert.equal(printAlarms({}, o("simple")), "");
  assert.equal(printAlarms({}, o("json")), "{}\n");
  assert.equal(printAlarms({ alarms: [{ memberID: "7", alarm: 2 }] }, o("simple")), "memberID:7 alarm:CORRUPT \n");
  assert.match(String(printAlarms(r, o("fields"))), /"MemberID" : 17227010664766480024\n"AlarmType" : NOSPACE\n$/);
  assert.throws(() => printAlarms(r, o("table")), /table not supported as output format/);
});
