// Public surface of src/transport (the server imports this file only).

export { CodecError, codecVersion, decodeBatch, encodeBatch, encodeFrame } from "./codec.ts";
export { raftPath, snapshotPath } from "./handler.ts";
export { TransportError, createAgent, peerGet, type PeerTlsClient } from "./http-client.ts";
export type { LatencyStats, PeerStats, SelfTransportStats, TransportObserver } from "./stats.ts";
export { PeerTransport, type PeerTransportOptions } from "./transport.ts";
export { PeerHeader, defaultLimits, type SendOptions, type TransportLimits, type TransportLogger } from "./types.ts";
export type { SnapshotAttachment } from "./types.ts";
