// Which client API a run drives, and the keys of each.
//
// Invariant: v2 and v3 keys are different strings. etcd keeps the v2 store and the v3
// key space apart (a v2 write is invisible to a v3 range), so a key written through both
// would be two registers under one name; distinct names keep the checker's per-key
// partitions (and the durability check, also per key) one register each.

import type { RegisterInput } from "../linearizability/register-model.ts";
import { runOp, type OpResult } from "./v2-client.ts";
import { runGrpcOp } from "./grpc-client.ts";
import { runV3Op } from "./v3-client.ts";

/** grpc: etcd's gRPC KV service (range / put / txn) on the client port. */
export const Api = { v2: "v2", v3: "v3", grpc: "grpc" } as const;
export type Api = (typeof Api)[keyof typeof Api];

/** What `--api` accepts: one API, or both (clients alternate, each on its own API's keys). */
export const ApiChoice = { ...Api, both: "both" } as const;
export type ApiChoice = (typeof ApiChoice)[keyof typeof ApiChoice];

export interface WorkloadKey {
  api: Api;
  key: string;
}

export function apisOf(choice: ApiChoice): Api[] {
  return choice === ApiChoice.both ? [Api.v2, Api.v3] : [choice];
}

export function parseApiChoice(value: string): ApiChoice {
  const all: readonly string[] = Object.values(ApiChoice);
  if (!all.includes(value)) throw new Error(`Cannot parse --api: "${value}" (v2, v3, grpc or both)`);
  return value as ApiChoice;
}

/** `perApi` keys for each API of the choice: v2 "lin/k<i>", v3 "lin3/k<i>", grpc "ling/k<i>". */
export function workloadKeys(choice: ApiChoice, perApi: number): WorkloadKey[] {
  return apisOf(choice).flatMap((api) => Array.from({ length: perApi }, (_, i) => ({ api, key: `${keyPrefix[api]}/k${i}` })));
}

// grpc keys are apart from the gateway's too, though one key space: each run's registers
// stay its own API's.
const keyPrefix: Record<Api, string> = { v2: "lin", v3: "lin3", grpc: "ling" };

/** Runs one register operation through the given API; never throws. */
export function runApiOp(api: Api, baseUrl: string, input: RegisterInput, timeoutMs: number): Promise<OpResult> {
  if (api === Api.v2) return runOp(baseUrl, input, timeoutMs);
  return api === Api.v3 ? runV3Op(baseUrl, input, timeoutMs) : runGrpcOp(baseUrl, input, timeoutMs);
}
