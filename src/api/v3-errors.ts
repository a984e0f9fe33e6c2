// The v3 API's errors as etcd 3.4's gateway renders them: a gRPC status code and an
// "etcdserver: ..." message, sent as {"error","message","code"} with the HTTP status the
// grpc-gateway maps the code to. Wire strings match etcd byte for byte (clients match on them).

/** gRPC status codes used by the v3 API. */
export const GrpcCode = {
  Cancelled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
} as const;

export type GrpcCodeValue = (typeof GrpcCode)[keyof typeof GrpcCode];

/** grpc-gateway's HTTPStatusFromCode (runtime/errors.go), including 9 -> 412. */
export function httpStatusOfGrpcCode(code: number): number {
  switch (code) {
    case 0: return 200;
    case 1: return 408; // Canceled
    case 2: return 500;
    case 3: return 400;
    case 4: return 504;
    case 5: return 404;
    case 6: return 409;
    case 7: return 403;
    case 8: return 429;
    case 9: return 412;
    case 10: return 409;
    case 11: return 400;
    case 12: return 501;
    case 13: return 500;
    case 14: return 503;
    case 15: return 500;
    case 16: return 401;
    default: return 500;
  }
}

/**
 * A v3 API error: gRPC code + message, nothing of HTTP. The gateway maps the code to a
 * status at its edge (http/v3-respond.ts, httpStatusOfGrpcCode); gRPC sends it as it is.
 */
export class V3Error extends Error {
  override name = "V3Error";
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

// etcd's rpctypes: the errors a client can get, by the name etcd gives them.
const e = (code: number, message: string) => (): V3Error => new V3Error(code, message);
/** How grpc-go's refusal of a message over its receive limit begins (V3Errors.messageTooLarge). */
export const MESSAGE_TOO_LARGE = "grpc: received message larger than max";

/** grpc-go refused the message before any handler or interceptor saw it. */
export function isMessageTooLarge(err: unknown): boolean {
  return err instanceof V3Error && err.code === GrpcCode.ResourceExhausted && err.message.startsWith(MESSAGE_TOO_LARGE);
}

export const V3Errors = {
  emptyKey: e(GrpcCode.InvalidArgument, "etcdserver: key is not provided"),
  keyNotFound: e(GrpcCode.InvalidArgument, "etcdserver: key not found"),
  valueProvided: e(GrpcCode.InvalidArgument, "etcdserver: value is provided"),
  leaseProvided: e(GrpcCode.InvalidArgument, "etcdserver: lease is provided"),
  tooManyOps: e(GrpcCode.InvalidArgument, "etcdserver: too many operations in txn request"),
  duplicateKey: e(GrpcCode.InvalidArgument, "etcdserver: duplicate key given in txn request"),
  compacted: e(GrpcCode.OutOfRange, "etcdserver: mvcc: required revision has been compacted"),
  futureRev: e(GrpcCode.OutOfRange, "etcdserver: mvcc: required revision is a future revision"),
  noSpace: e(GrpcCode.ResourceExhausted, "etcdserver: mvcc: database space exceeded"),
  leaseNotFound: e(GrpcCode.NotFound, "etcdserver: requested lease not found"),
  leaseExist: e(GrpcCode.FailedPrecondition, "etcdserver: lease already exists"),
  leaseTTLTooLarge: e(GrpcCode.OutOfRange, "etcdserver: too large lease TTL"),
  memberExist: e(GrpcCode.FailedPrecondition, "etcdserver: member ID already exist"),
  peerURLExist: e(GrpcCode.FailedPrecondition, "etcdserver: Peer URLs already exists"),
  memberNotEnoughStarted: e(GrpcCode.FailedPrecondition, "etcdserver: re-configuration failed due to not enough started members"),
  memberBadURLs: e(GrpcCode.InvalidArgument, "etcdserver: given member URLs are invalid"),
  memberNotFound: e(GrpcCode.NotFound, "etcdserver: member not found"),
  memberNotLearner: e(GrpcCode.FailedPrecondition, "etcdserver: can only promote a learner member"),
  learnerNotReady: e(GrpcCode.FailedPrecondition, "etcdserver: can only promote a learner member which is in sync with leader"),
  tooManyLearners: e(GrpcCode.FailedPrecondition, "etcdserver: too many learner members in cluster"),
  requestTooLarge: e(GrpcCode.InvalidArgument, "etcdserver: request is too large"),
  rootUserNotExist: e(GrpcCode.FailedPrecondition, "etcdserver: root user does not exist"),
  rootRoleNotExist: e(GrpcCode.FailedPrecondition, "etcdserver: root user does not have root role"),
  userAlreadyExist: e(GrpcCode.FailedPrecondition, "etcdserver: user name already exists"),
  userEmpty: e(GrpcCode.InvalidArgument, "etcdserver: user name is empty"),
  userNotFound: e(GrpcCode.FailedPrecondition, "etcdserver: user name not found"),
  roleAlreadyExist: e(GrpcCode.FailedPrecondition, "etcdserver: role name already exists"),
  roleNotFound: e(GrpcCode.FailedPrecondition, "etcdserver: role name not found"),
  roleEmpty: e(GrpcCode.InvalidArgument, "etcdserver: role name is empty"),
  authFailed: e(GrpcCode.InvalidArgument, "etcdserver: authentication failed, invalid user ID or password"),
  permissionDenied: e(GrpcCode.PermissionDenied, "etcdserver: permission denied"),
  roleNotGranted: e(GrpcCode.FailedPrecondition, "etcdserver: role is not granted to the user"),
  permissionNotGranted: e(GrpcCode.FailedPrecondition, "etcdserver: permission is not granted to the role"),
  authNotEnabled: e(GrpcCode.FailedPrecondition, "etcdserver: authentication is not enabled"),
  invalidAuthToken: e(GrpcCode.Unauthenticated, "etcdserver: invalid auth token"),
  authOldRevision: e(GrpcCode.InvalidArgument, "etcdserver: revision of auth store is old"),
  invalidAuthMgmt: e(GrpcCode.InvalidArgument, "etcdserver: invalid auth management"),
  noLeader: e(GrpcCode.Unavailable, "etcdserver: no leader"),
  notLeader: e(GrpcCode.FailedPrecondition, "etcdserver: not leader"),
  leaderChanged: e(GrpcCode.Unavailable, "etcdserver: leader changed"),
  notCapable: e(GrpcCode.Unavailable, "etcdserver: not capable"),
  stopped: e(GrpcCode.Unavailable, "etcdserver: server stopped"),
  timeout: e(GrpcCode.Unavailable, "etcdserver: request timed out"),
  /** A wait that ended at the client's deadline: etcd returns context.DeadlineExceeded, which grpc-go 1.33 sends as Unknown. */
  contextDeadlineExceeded: e(GrpcCode.Unknown, "context deadline exceeded"),
  timeoutDueToLeaderFail: e(GrpcCode.Unavailable, "etcdserver: request timed out, possibly due to previous leader failure"),
  timeoutDueToConnectionLost: e(GrpcCode.Unavailable, "etcdserver: request timed out, possibly due to connection lost"),
  /** MoveLeader's wait for the transferee to lead ran out: not in etcd's gRPC error map, so grpc-go sends it as Unknown. */
  timeoutLeaderTransfer: e(GrpcCode.Unknown, "etcdserver: request timed out, leader transfer took too long"),
  unhealthy: e(GrpcCode.Unavailable, "etcdserver: unhealthy cluster"),
  corrupt: e(GrpcCode.DataLoss, "etcdserver: corrupt cluster"),
  badLeaderTransferee: e(GrpcCode.FailedPrecondition, "etcdserver: bad leader transferee"),
  /** grpc-go's refusal of a message over the receive limit (the gateway answers it too). */
  messageTooLarge: (size: number, limit: number): V3Error => new V3Error(GrpcCode.ResourceExhausted, `${MESSAGE_TOO_LARGE} (${size} vs. ${limit})`),
} as const;
