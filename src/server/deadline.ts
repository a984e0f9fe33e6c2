// A caller's deadline (gRPC's grpc-timeout header; the HTTP APIs carry none), as the places
// that wait on the cluster see it: the wait for a leader before a proposal can go in, the
// wait for its apply, a ReadIndex round. etcd passes the call's context.Context down to
// the same waits and gives up on each when the context ends, so the answer comes at the
// deadline rather than at the member's own request timeout.

export interface Deadline {
  /** True once the deadline has passed. */
  readonly expired: boolean;
  /** Calls `fn` when the deadline passes (at once if it has); returns what cancels that. */
  onExpire(fn: () => void): () => void;
}

/**
 * The deadline passed while the call waited. `proposed`: the entry was already in Raft
 * (etcd's processInternalRaftRequestOnce then answers ErrTimeout, code 14); otherwise it was
 * waiting for a leader or a read barrier, and etcd returns the context's own error.
 */
export class DeadlineExceededError extends Error {
  override name = "DeadlineExceededError";
  readonly proposed: boolean;

  constructor(proposed: boolean) {
    super("context deadline exceeded");
    this.proposed = proposed;
  }
}

/** `p`, or a DeadlineExceededError(false) if the deadline passes first. */
export function beforeDeadline<T>(p: Promise<T>, deadline: Deadline | undefined): Promise<T> {
  if (deadline === undefined) return p;
  return new Promise<T>((resolve, reject) => {
    const cancel = deadline.onExpire(() => reject(new DeadlineExceededError(false)));
    p.then(
      (v) => {
        cancel();
        resolve(v);
      },
      (err: unknown) => {
        cancel();
        reject(err);
      },
    );
  });
}
