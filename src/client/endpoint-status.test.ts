import { test } from "node:test";
import assert from "node:assert/strict";
import { ClusterClient } from "./cluster.ts";
import type { HttpRequest, HttpResponse, Transport } from "./transport.ts";
import { getEndpointStatus } from "./endpoint-status.ts";

function scripted(answers: Record<string, HttpResponse>): { client: ClusterClient; sent: HttpRequest[] } {
  const sent: HttpRequest[] = [];
  const transport: Transport = {
    async request(req) {
      sent.push(req);
      const a = answers[req.path];
      if (a === undefined) throw new Error(`unexpected ${req.path}`);
      return a;
    },
    close() {},
  };
  return { client: new ClusterClient({ endpoints: ["http://m:1"], transport }), sent };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse => ({
  status,
  statusText: "",
  headers,
  body: JSON.stringify(body),
});

const self = (state: string, id: string, leader: string): HttpResponse =>
  json(200, { name: "m1", id, state, leaderInfo: { leader, uptime: "1s", startTime: "" } });
const root = json(200, { action: "get", node: { dir: true } }, { "x-raft-term": "4", "x-raft-index": "70", "x-etcd-index": "35" });

const cases: { name: string; self: HttpResponse; want: { isLeader: boolean; leader: string } }[] = [
  { name: "reports a leader from its state", self: self("StateLeader", "491a2665b32e660", "491a2665b32e660"), want: { isLeader: true, leader: "491a2665b32e660" } },
  { name: "reports a follower and its leader", self: self("StateFollower", "acd190b05df115e4", "491a2665b32e660"), want: { isLeader: false, leader: "491a2665b32e660" } },
];

for (const c of cases) {
  test(`getEndpointStatus ${c.name}`, async () => {
    const { client, sent } = scripted({ "/v2/stats/self": c.self, "/v2/keys/": root });
    const s = await getEndpointStatus(client);
    assert.deepEqual(s, { id: JSON.parse(c.self.body).id, name: "m1", ...c.want, raftTerm: 4, raftIndex: 70 });
    assert.deepEqual(sent.map((r) => `${r.method} ${r.path}`), ["GET /v2/stats/self", "GET /v2/keys/"]);
  });
}

test("getEndpointStatus fails with the server's message when the root read is refused", async () => {
  const denied = json(401, { errorCode: 110, message: "The request requires user authentication", cause: "Insufficient credentials", index: 0 });
  const { client } = scripted({ "/v2/stats/self": self("StateLeader", "1", "1"), "/v2/keys/": denied });
  await assert.rejects(getEndpointStatus(client), /The request requires user authentication/);
});

test("getEndpointStatus fails when the Raft headers are missing", async () => {
  const bare = json(200, { action: "get", node: { dir: true } });
  const { client } = scripted({ "/v2/stats/self": self("StateLeader", "1", "1"), "/v2/keys/": bare });
  await assert.rejects(getEndpointStatus(client), /no valid X-Raft-Term header/);
});
