#!/usr/bin/env bash
# Differential fuzzing of the v3 API (JSON gateway and gRPC) against a real etcd 3.4 (on PATH):
#   scripts/fuzz-v3.sh [SEED] [COUNT]
# Starts a fresh etcd and a fresh `kvctl serve` (bin/kvctl: run `node scripts/bundle.mjs`
# first to test the current sources; KVCTL_FUZZ_BIN names another entry file, a worktree's
# bin/kvctl say), sends both the same COUNT seeded requests and prints every divergence
# (FUZZ_MAX_DIVERGENCES, default 20, stops the run earlier). Exit 1 on any.
# FUZZ_WIRES=gw or FUZZ_WIRES=grpc sends every request through that one wire. Ports:
# KVCTL_FUZZ_V3_PORTS ("lo-hi", default 27000-27999). Both servers must start at the same
# revision (checked). The run stops on its own before leases with the shortest generated
# TTL (3600 s) could expire. What kvctl keeps different on purpose: test/fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --import tsx test/fuzz/v3-differential.ts "${1:-$RANDOM}" "${2:-2000}"
