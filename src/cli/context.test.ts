// fail(): etcdctl's handleError bytes, including Go's multi-line ClusterError.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ClusterError } from "../client/errors.ts";
import { createContext, credentials, fail } from "./context.ts";
import { buildInvocation, type GlobalOptions } from "./invocation.ts";
import { CliExit } from "./exit-codes.ts";

test("fail prints a cluster error as etcdctl: each endpoint's error ends its line, then the Detail block", () => {
  const err = new ClusterError([new Error("dial tcp 127.0.0.1:1: connect: connection refused"), new Error("dial tcp 127.0.0.1:2: connect: connection refused")]);
  const exit = fail(4, err);
  assert.equal(exit.exitCode, 4);
  assert.equal(
    exit.stderr,
    "Error:  client: etcd cluster is unavailable or misconfigured; error #0: dial tcp 127.0.0.1:1: connect: connection refused\n" +
      "; error #1: dial tcp 127.0.0.1:2: connect: connection refused\n\n" +
      "error #0: dial tcp 127.0.0.1:1: connect: connection refused\nerror #1: dial tcp 127.0.0.1:2: connect: connection refused\n\n",
  );
});

test("fail prints any other error on one line", () => {
  assert.equal(fail(4, new Error("context deadline exceeded")).stderr, "Error:  context deadline exceeded\n");
});

test("credentials: an empty user name sends none (Go's client sets Basic auth only for a user)", async () => {
  const g = (username: string): GlobalOptions => ({ username }) as GlobalOptions;
  assert.equal(await credentials(g(":pw")), undefined);
  assert.deepEqual(await credentials(g("root:")), { username: "root", password: "" });
  assert.deepEqual(await credentials(g("u1:p:w")), { username: "u1", password: "p:w" });
});

test("a TLS file etcdctl refuses fails before any request: newClient's bare line, exit 1; cluster-health's Error:, exit 4", async () => {
  const io = { stdout: () => {}, stderr: () => {} };
  const globals = { endpoints: "http://127.0.0.1:1", cacert: "/nonexistent/ca.pem" };
  const get = buildInvocation({ command: "get", globals, flags: {}, args: ["/a"] }, {});
  await assert.rejects(createContext(get, io, { sync: true }), (e: unknown) => e instanceof CliExit && e.exitCode === 1 && e.stderr === "open /nonexistent/ca.pem: no such file or directory\n");
  const health = buildInvocation({ command: "cluster-health", globals: { ...globals, cert: "/c.pem" }, flags: {}, args: [] }, {});
  await assert.rejects(
    createContext(health, io, { sync: false }),
    (e: unknown) => e instanceof CliExit && e.exitCode === 4 && e.stderr === "Error:  KeyFile and CertFile must both be present[key: , cert: /c.pem]\n",
  );
});
