// The v2 key-space error table, as etcd's v2error package defines it. Wire strings must
// match etcd byte for byte: clients (etcdctl, python-etcd, node-etcd) branch on them.

export const V2ErrorCode = {
  KeyNotFound: 100,
  TestFailed: 101,
  NotFile: 102,
  NotDir: 104,
  NodeExist: 105,
  RootReadOnly: 107,
  DirNotEmpty: 108,
  Unauthorized: 110,
  PrevValueRequired: 201,
  TtlNaN: 202,
  IndexNaN: 203,
  InvalidField: 209,
  InvalidForm: 210,
  RefreshValue: 211,
  RefreshTtlRequired: 212,
  RaftInternal: 300,
  LeaderElect: 301,
  WatcherCleared: 400,
  EventIndexCleared: 401,
} as const;

export type V2ErrorCodeValue = (typeof V2ErrorCode)[keyof typeof V2ErrorCode];

export const v2ErrorMessages: Readonly<Record<number, string>> = {
  100: "Key not found",
  101: "Compare failed",
  102: "Not a file",
  103: "Reached the max number of peers in the cluster",
  104: "Not a directory",
  105: "Key already exists",
  106: "The prefix of given key is a keyword in etcd",
  107: "Root is read only",
  108: "Directory not empty",
  109: "Peer address has existed",
  110: "The request requires user authentication",
  200: "Value is Required in POST form",
  201: "PrevValue is Required in POST form",
  202: "The given TTL in POST form is not a number",
  203: "The given index in POST form is not a number",
  204: "Value or TTL is required in POST form",
  205: "The given timeout in POST form is not a number",
  206: "Name is required in POST form",
  207: "Index or value is required",
  208: "Index and value cannot both be specified",
  209: "Invalid field",
  210: "Invalid POST form",
  211: "Value provided on refresh",
  212: "A TTL must be provided on refresh",
  300: "Raft Internal Error",
  301: "During Leader Election",
  400: "watcher is cleared due to etcd recovery",
  401: "The event in requested index is outdated and cleared",
  402: "Standby Internal Error",
  403: "Invalid active size",
  404: "Standby remove delay",
  500: "Client Internal Error",
};

/** The JSON body of a v2 key-space error: `cause` is omitted when empty. */
export interface V2ErrorBody {
  errorCode: number;
  message: string;
  cause?: string;
  index: number;
}

/** A v2 key-space error. `index` is the store index when it happened (0 for parameter errors). */
export class V2Error extends Error {
  readonly errorCode: number;
  readonly cause_: string;
  index: number;

  constructor(errorCode: number, cause = "", index = 0, message?: string) {
    const text = message ?? v2ErrorMessages[errorCode] ?? "Unknown error";
    super(cause ? `${text} (${cause})` : text);
    this.name = "V2Error";
    this.errorCode = errorCode;
    this.cause_ = cause;
    this.index = index;
  }

  /** The wire message: the table's text, not the decorated Error.message. */
  get wireMessage(): string {
    return v2ErrorMessages[this.errorCode] ?? this.message;
  }

  toJSON(): V2ErrorBody {
    // etcd's field order (Go marshals struct fields in order): cause, when set, before index.
    if (this.cause_ === "") return { errorCode: this.errorCode, message: this.wireMessage, index: this.index };
    return { errorCode: this.errorCode, message: this.wireMessage, cause: this.cause_, index: this.index };
  }
}

/** HTTP status for a v2 error code, as etcd's v2error.StatusCode (401/110 handled as etcd's v2http). */
export function v2ErrorStatus(errorCode: number): number {
  switch (errorCode) {
    case V2ErrorCode.KeyNotFound:
      return 404;
    case V2ErrorCode.NotFile:
    case V2ErrorCode.DirNotEmpty:
      return 403;
    case V2ErrorCode.TestFailed:
    case V2ErrorCode.NodeExist:
      return 412;
    case V2ErrorCode.Unauthorized:
      return 401;
    default:
      return Math.floor(errorCode / 100) === 3 ? 500 : 400;
  }
}
