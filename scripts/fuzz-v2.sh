#!/usr/bin/env bash
# Differential fuzzing of the v2 API against a real etcd 3.4 (on PATH):
#   scripts/fuzz-v2.sh [SEED] [COUNT]          keys requests (HTTP)
#   scripts/fuzz-v2.sh auth [SEED] [COUNT]     /v2/auth requests mixed with keys requests,
#                                              with and without Basic credentials
#   scripts/fuzz-v2.sh cli [SEED] [COUNT]      kvctl's v2 commands against ETCDCTL_API=2 etcdctl
# Starts a fresh etcd and a fresh `kvctl serve` (bin/kvctl: run `node scripts/bundle.mjs`
# first to test the current sources), sends both the same COUNT seeded requests (or runs
# each CLI against its own server) and prints every divergence (FUZZ_MAX_DIVERGENCES,
# default 20, stops the run earlier). Exit 1 on any. KVCTL_TEST_PORTS=lo-hi keeps the
# servers' ports in a range.
# The extra request shapes (dirs with prevExist, waits from history, refreshes, repeated
# parameters...) are on, as in the CI test (test/fuzz/v2-differential.test.ts);
# FUZZ_SHAPES=0 leaves them out. Both servers start fresh and must start at the same
# index (checked), so the waitIndex and prevIndex the generator takes from etcd's answers
# mean the same on kvctl. A run stops on its own before
# keys with the shortest generated TTL (600 s) could expire, which each server would do at
# its own SYNC; a TTL that expires at once (wrapped into the past) is waited out on both.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  auth)
    shift
    FUZZ_MODE=auth exec node --import tsx test/fuzz/v2-differential.ts "${1:-$RANDOM}" "${2:-2000}"
    ;;
  cli)
    shift
    exec node --import tsx test/fuzz/v2-cli.ts "${1:-$RANDOM}" "${2:-300}"
    ;;
  *)
    exec node --import tsx test/fuzz/v2-differential.ts "${1:-$RANDOM}" "${2:-2000}"
    ;;
esac
