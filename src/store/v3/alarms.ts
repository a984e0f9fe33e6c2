// The cluster's alarms (etcd's v3alarm.AlarmStore): which member raised which alarm. They
// change only through the log (apply), so every member holds the same set, and they are
// kept in the backend beside the key space, so they survive restarts and travel with a
// snapshot. NOSPACE caps the key space: writes that would grow it are refused until an
// operator disarms it (key-space.ts).

import type { MvccBackend } from "./backend.ts";

/** etcd's AlarmType values. */
export const AlarmType = { NONE: 0, NOSPACE: 1, CORRUPT: 2 } as const;
/**
 * An alarm's type as the table keeps it: any int32, as etcd's alarm store keeps any
 * AlarmType number a client sends. Only NOSPACE and CORRUPT change what the member does;
 * another number is just listed (etcd: "unimplemented alarm activation").
 */
export type AlarmTypeValue = number;

/** Go's String() of an AlarmType (etcd's Status errors and log lines): the name, or the number for a type it does not know. */
export function alarmName(alarm: AlarmTypeValue): string {
  return alarm === AlarmType.NONE ? "NONE" : alarm === AlarmType.NOSPACE ? "NOSPACE" : alarm === AlarmType.CORRUPT ? "CORRUPT" : String(alarm);
}

/** One raised alarm; the member ID is a decimal uint64 string (never a JS number). */
export interface AlarmMember {
  memberId: string;
  alarm: AlarmTypeValue;
}

export type AlarmSink = Pick<MvccBackend, "putAlarm" | "removeAlarm">;

function keyOf(a: AlarmMember): string {
  return `${a.alarm}/${a.memberId}`;
}

export class AlarmTable {
  /** By "type/member", in the order they were raised. */
  #alarms = new Map<string, AlarmMember>();
  #sink: AlarmSink | undefined;

  constructor(opts: { sink?: AlarmSink; alarms?: Iterable<AlarmMember> } = {}) {
    for (const a of opts.alarms ?? []) this.#alarms.set(keyOf(a), { ...a });
    this.#sink = opts.sink;
  }

  /** Raises `alarm` for `memberId`; answers the alarm (the one already raised, if any). */
  activate(memberId: string, alarm: AlarmTypeValue): AlarmMember {
    const m: AlarmMember = { memberId, alarm };
    const had = this.#alarms.get(keyOf(m));
    if (had !== undefined) return had;
    this.#alarms.set(keyOf(m), m);
    this.#sink?.putAlarm(m);
    return m;
  }

  /** Clears `alarm` of `memberId`; answers what was cleared, undefined when it was not raised. */
  deactivate(memberId: string, alarm: AlarmTypeValue): AlarmMember | undefined {
    const k = keyOf({ memberId, alarm });
    const had = this.#alarms.get(k);
    if (had === undefined) return undefined;
    this.#alarms.delete(k);
    this.#sink?.removeAlarm(had);
    return had;
  }

  /** The alarms of one type, or all of them for NONE (etcd's Get). */
  get(alarm: AlarmTypeValue): AlarmMember[] {
    return [...this.#alarms.values()].filter((a) => alarm === AlarmType.NONE || a.alarm === alarm).map((a) => ({ ...a }));
  }

  has(alarm: AlarmTypeValue): boolean {
    for (const a of this.#alarms.values()) if (a.alarm === alarm) return true;
    return false;
  }
}
