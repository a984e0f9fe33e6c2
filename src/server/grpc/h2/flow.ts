// HTTP/2 flow control (RFC 9113 §5.2, §6.9) as plain counters: what we may send (the
// peer's window) and what the peer may send us (ours, reopened by WINDOW_UPDATE as we
// consume). Pure: the connection asks and applies.
import { ErrorCode, H2Error, MAX_WINDOW } from "./frame.ts";

/** The peer's window for our DATA on one stream or the connection. */
export class SendWindow {
  /** May go negative when the peer lowers SETTINGS_INITIAL_WINDOW_SIZE (§6.9.2). */
  available: number;
  readonly #streamId: number;

  constructor(initial: number, streamId: number) {
    this.available = initial;
    this.#streamId = streamId;
  }

  /** WINDOW_UPDATE: an increment of 0 is a PROTOCOL_ERROR, past 2^31-1 a FLOW_CONTROL_ERROR. */
  update(increment: number): void {
    if (increment === 0) throw new H2Error(ErrorCode.PROTOCOL_ERROR, "WINDOW_UPDATE of 0", this.#streamId);
    if (this.available + increment > MAX_WINDOW) throw new H2Error(ErrorCode.FLOW_CONTROL_ERROR, "window over 2^31-1", this.#streamId);
    this.available += increment;
  }

  /** A change of SETTINGS_INITIAL_WINDOW_SIZE (streams only; a connection error past 2^31-1). */
  adjust(delta: number): void {
    if (this.available + delta > MAX_WINDOW) throw new H2Error(ErrorCode.FLOW_CONTROL_ERROR, "window over 2^31-1 after SETTINGS");
    this.available += delta;
  }

  consume(n: number): void {
    this.available -= n;
  }
}

/**
 * Our window for the peer's DATA. Received bytes (padding included) count against it at
 * once; they are given back by one WINDOW_UPDATE once half the window was consumed.
 */
export class ReceiveWindow {
  readonly #size: number;
  #available: number;
  readonly #streamId: number;

  constructor(size: number, streamId: number) {
    this.#size = size;
    this.#available = size;
    this.#streamId = streamId;
  }

  get available(): number {
    return this.#available;
  }

  /** A DATA frame of `n` bytes arrived: over the window is a FLOW_CONTROL_ERROR. */
  receive(n: number): void {
    if (n > this.#available) throw new H2Error(ErrorCode.FLOW_CONTROL_ERROR, `DATA of ${n} bytes over a window of ${this.#available}`, this.#streamId);
    this.#available -= n;
  }

  /** Received bytes were consumed: the increment to send now (0 until half the window is used). */
  consumed(): number {
    const missing = this.#size - this.#available;
    if (missing < this.#size / 2) return 0;
    this.#available = this.#size;
    return missing;
  }
}
