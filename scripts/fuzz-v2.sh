#!/usr/bin/env bash
# Differential fuzzing of the v2 HTTP API against a real etcd 3.4 (on PATH):
#   scripts/fuzz-v2.sh [SEED] [COUNT]
# Starts a fresh etcd and a fresh `kvctl serve` (bin/kvctl: run `node scripts/bundle.mjs`
# first to test the current sources), sends both the same COUNT seeded requests and prints
# every divergence (FUZZ_MAX_DIVERGENCES, default 20, stops the run earlier). Exit 1 on any.
# The extra request shapes (dirs with prevExist, waits from history, refreshes, repeated
# parameters...) are on, as in the CI test (test/fuzz/v2-differential.test.ts);
# FUZZ_SHAPES=0 leaves them out. Both servers start fresh and must start at the same
# index (checked), so the waitIndex and prevIndex the generator takes from etcd's answers
# mean the same on kvctl. A run stops on its own before
# keys with the shortest generated TTL (600 s) could expire, which each server would do at
# its own SYNC; a TTL that expires at once (wrapped into the past) is waited out on both.
set -euo pipefail
cd "$(dirname "$0")/.."
exec node --import tsx test/fuzz/v2-differential.ts "${1:-$RANDOM}" "${2:-2000}"
