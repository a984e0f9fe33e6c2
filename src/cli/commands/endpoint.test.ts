import { test } from "node:test";
import assert from "node:assert/strict";
import { formatStatusJson, formatStatusTable, formatTable } from "./endpoint.ts";

const rows = [
  { endpoint: "127.0.0.1:23301", status: { id: "491a2665b32e660", name: "e1", leader: "491a2665b32e660", isLeader: true, raftTerm: 4, raftIndex: 70 } },
  { endpoint: "127.0.0.1:23303", status: { id: "acd190b05df115e4", name: "e2", leader: "491a2665b32e660", isLeader: false, raftTerm: 4, raftIndex: 70 } },
];

test("formatStatusTable draws etcdctl v3's table (centred headers, right-aligned cells)", () => {
  assert.equal(
    formatStatusTable(rows),
    [
      "+-----------------+------------------+-----------+-----------+------------+",
      "|    ENDPOINT     |        ID        | IS LEADER | RAFT TERM | RAFT INDEX |",
      "+-----------------+------------------+-----------+-----------+------------+",
      "| 127.0.0.1:23301 |  491a2665b32e660 |      true |         4 |         70 |",
      "| 127.0.0.1:23303 | acd190b05df115e4 |     false |         4 |         70 |",
      "+-----------------+------------------+-----------+-----------+------------+",
      "",
    ].join("\n"),
  );
});

test("formatTable closes the table even when no row could be read", () => {
  assert.equal(formatTable(["endpoint", "ID"], []), "+----------+----+\n| ENDPOINT | ID |\n+----------+----+\n+----------+----+\n");
});

test("formatStatusJson prints one line shaped like v3's", () => {
  const out = formatStatusJson(rows.slice(0, 1));
  assert.equal(
    out,
    '[{"Endpoint":"127.0.0.1:23301","Status":{"id":"491a2665b32e660","name":"e1","leader":"491a2665b32e660","isLeader":true,"raftTerm":4,"raftIndex":70}}]\n',
  );
  assert.equal(formatStatusJson([]), "[]\n");
});
