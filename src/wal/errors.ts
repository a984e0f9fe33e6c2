// Errors of the WAL and the snapshotter. Each carries a stable `code` that callers may
// switch on; messages follow "Cannot <do X>: <detail>" without a final period.

export const WalErrorCode = {
  Corrupt: "WAL_CORRUPT",
  Exists: "WAL_EXISTS",
  NotFound: "WAL_NOT_FOUND",
  SnapshotMismatch: "WAL_SNAPSHOT_MISMATCH",
  MissingEntries: "WAL_MISSING_ENTRIES",
  MetadataConflict: "WAL_METADATA_CONFLICT",
  Closed: "WAL_CLOSED",
  TooLarge: "WAL_RECORD_TOO_LARGE",
  BadAppend: "WAL_BAD_APPEND",
} as const;
export type WalErrorCode = (typeof WalErrorCode)[keyof typeof WalErrorCode];

export class WalError extends Error {
  readonly code: WalErrorCode;
  constructor(code: WalErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "WalError";
    this.code = code;
  }
}

/**
 * A record that cannot be trusted where a torn tail is impossible: before the end of the
 * last segment, or anywhere in an earlier one. Opening must stop: skipping it could drop
 * or reorder acknowledged writes.
 */
export class WalCorruptError extends WalError {
  readonly file: string;
  readonly offset: number;
  constructor(opts: { file: string; offset: number; detail: string }) {
    super(WalErrorCode.Corrupt, `Cannot read WAL: ${opts.detail} in ${opts.file} at offset ${opts.offset}`);
    this.name = "WalCorruptError";
    this.file = opts.file;
    this.offset = opts.offset;
  }
}
