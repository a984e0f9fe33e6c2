// Which client API a run drives, and the keys of each.
//
// Invariant: v2 and v3 keys are different strings. etcd keeps the v2 store and the v3
// key space apart (a v2 write is invisible to a v3 range), so a key written through both
// would be two registers under one name; distinct names keep the checker's per-key
// partitions (and the durability check, also per key) one register each.

import type { RegisterInput } from "../linearizability/register-model.ts";
import { runOp, type OpResult } from "./v2-client.ts";
import { runV3Op } from "./v3-client.ts";

export const Api = { v2: "v2", v3: "v3" } as const;
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
  if (!all.includes(value)) throw new Error(`Cannot parse --api: "${value}" (v2, v3 or both)`);
  return value as ApiChoice;
}

/** `perApi` keys for each API of the choice: v2 "lin/k<i>", v3 "lin3/k<i>". */
export function workloadKeys(choice: ApiChoice, perApi: number): WorkloadKey[] {
  return apisOf(choice).flatMap((api) => Array.from({ length: perApi }, (_, i) => ({ api, key: `${api === Api.v2 ? "lin" : "lin3"}/k${i}` })));
}

/** Runs one register operation through the given API; never throws. */
export function runApiOp(api: Api, baseUrl: string, input: RegisterInput, timeoutMs: number): Promise<OpResult> {
  return api === Api.v2 ? runOp(baseUrl, input, timeoutMs) : runV3Op(baseUrl, input, timeoutMs);
}
