#!/usr/bin/env bash
# Differential fuzzing of the v2 HTTP API against a real etcd 3.4 (on PATH):
#   scripts/fuzz-v2.sh [SEED] [COUNT]
# Starts a fresh etcd and a fresh `kvctl serve` (bin/kvctl: run `node scripts/bundle.mjs`
# first to test the current sources), sends both the same COUNT seeded requests and prints
# every divergence (FUZZ_MAX_DIVERGENCES, default 20, stops the run earlier). Exit 1 on any.
# FUZZ_SHAPES=0 leaves out the extra request shapes (dirs with prevExist, waits from history...).
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --import tsx test/fuzz/v2-differential.ts "${1:-$RANDOM}" "${2:-2000}"
