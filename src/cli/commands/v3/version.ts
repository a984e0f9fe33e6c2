// v3 version (version_command.go): the client's version and the API version, no request.

import type { Io } from "../../io.ts";
import type { V3Invocation } from "./argv.ts";
import { V3Exit } from "./context.ts";

/** The etcd release whose etcdctl `kvctl v3` follows, and its API version. */
export const etcdctlVersion = "3.4.23";
export const apiVersion = "3.4";

export function run(_inv: V3Invocation, io: Io): Promise<number> {
  io.stdout(`etcdctl version: ${etcdctlVersion}\nAPI version: ${apiVersion}\n`);
  return Promise.resolve(V3Exit.Success);
}
