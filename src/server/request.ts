// What goes into the Raft log. Every change to replicated state is one of these commands,
// encoded as JSON bytes in a log entry. Apply must produce the same state from the same
// commands on every member, so a command carries everything apply needs: no clock reads,
// no environment (the proposer stamps `time`, and TTLs travel as absolute expirations).

/** A v2 key-space request, after validation at the HTTP edge (etcd's etcdserverpb.Request). */
export interface V2Request {
  method: "PUT" | "POST" | "DELETE" | "QGET";
  path: string;
  val: string;
  dir: boolean;
  prevValue: string;
  prevIndex: number;
  /** Tri-state: absent means "not given", which differs from false. */
  prevExist?: boolean;
  /** Absolute expiry (ms since the epoch, sub-ms fraction allowed); absent = no TTL given. */
  expiration?: number;
  recursive: boolean;
  sorted: boolean;
  refresh?: boolean;
}

/** Member attributes published by a member after it starts (etcd's publish). */
export interface MemberAttributes {
  id: number;
  name: string;
  clientUrls: string[];
}

/**
 * `m` is the proposing member and `id` its request id: only the proposer waits for the
 * result, so apply triggers a waiter only when `m` is this member. `time` is the
 * proposer's clock when it proposed (ms since the epoch).
 */
export type Command =
  | { t: "v2"; m: number; id: number; time: number; r: V2Request }
  /** The leader's clock, replicated so that TTL expiry is the same on every member. */
  | { t: "sync"; m: number; id: number; time: number }
  | { t: "attr"; m: number; id: number; time: number; a: MemberAttributes };

/** A command before the server gives it its proposer and id. */
export type CommandBody = Command extends infer C ? (C extends Command ? Omit<C, "m" | "id"> : never) : never;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeCommand(c: Command): Uint8Array {
  return encoder.encode(JSON.stringify(c));
}

export function decodeCommand(data: Uint8Array): Command {
  const parsed: unknown = JSON.parse(decoder.decode(data));
  if (typeof parsed !== "object" || parsed === null || !("t" in parsed) || !("id" in parsed)) {
    // A log entry we cannot read means the log is not ours or is corrupt: stop, never guess.
    throw new Error("Cannot decode log entry: not a kvctl command");
  }
  return parsed as Command;
}
