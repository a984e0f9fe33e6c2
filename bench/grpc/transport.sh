#!/usr/bin/env bash
# CPU per unary call of the gRPC transport alone (transport-server.ts: no member behind
# it), for one or more source trees side by side: each tree's server in turn gets the same
# h2load run of Put calls, --rounds times, and the process CPU it used is read from /proc
# (utime+stime). Prints µs per call and req/s per round, then the median per tree.
#
#   bench/grpc/transport.sh [-n 60000] [-c 8] [-m 8] [--rounds 3] [--port-base 21660] <tree> [<tree>...]
#
# A tree is a checkout with node_modules (e.g. `git worktree add /tmp/t <commit>; ln -s
# <repo>/node_modules /tmp/t/`). Ports P, P+1, ...; every process started is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=60000; C=8; M=8; ROUNDS=3; PB=21660; TREES=()
while [ $# -gt 0 ]; do
  case "$1" in
    -n) N=$2; shift 2 ;;
    -c) C=$2; shift 2 ;;
    -m) M=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --port-base) PB=$2; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) TREES+=("$(cd "$1" && pwd)"); shift ;;
  esac
done
[ ${#TREES[@]} -gt 0 ] || { echo "usage: $0 [options] <tree> [<tree>...]" >&2; exit 2; }
command -v h2load >/dev/null || { echo "h2load missing: apt-get install -y nghttp2-client" >&2; exit 2; }
TMP=$(mktemp -d /tmp/kvctl-grpc-transport.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
node bench/grpc/frames.mjs "$TMP"
SERVER=$(pwd)/bench/grpc/transport-server.ts
declare -A PID PORT
for i in "${!TREES[@]}"; do
  t=${TREES[$i]}; p=$((PB + i))
  (cd "$t" && exec node --import tsx "$SERVER" "$t" "$p") >"$TMP/server-$i.log" 2>&1 & PIDS+=($!)
  PID[$i]=$!; PORT[$i]=$p
  for _ in $(seq 100); do grep -q listening "$TMP/server-$i.log" && break; sleep 0.1; done
  grep -q listening "$TMP/server-$i.log" || { cat "$TMP/server-$i.log" >&2; exit 1; }
done
h2() { h2load -n "$1" -c "$C" -m "$M" -d "$TMP/put.bin" -H 'content-type: application/grpc' -H 'te: trailers' "http://127.0.0.1:$2/etcdserverpb.KV/Put" 2>&1; }
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
for i in "${!TREES[@]}"; do h2 10000 "${PORT[$i]}" >/dev/null; done # warm-up
declare -A US
for r in $(seq "$ROUNDS"); do
  for i in "${!TREES[@]}"; do
    t0=$(cpu "${PID[$i]}")
    out=$(h2 "$N" "${PORT[$i]}")
    t1=$(cpu "${PID[$i]}")
    grep -q " 0 failed, 0 errored" <<<"$out" || { echo "$out" >&2; exit 1; }
    us=$(awk -v d=$((t1 - t0)) -v hz="$hz" -v n="$N" 'BEGIN { printf "%.1f", d / hz * 1e6 / n }')
    rps=$(awk '/^finished in/ { gsub(",", "", $4); print int($4) }' <<<"$out")
    echo "round $r ${TREES[$i]}: $us µs/call, $rps req/s"
    US[$i]+="$us "
  done
done
echo "| tree | CPU µs/call (median of $ROUNDS) |"
echo "|---|---:|"
for i in "${!TREES[@]}"; do
  echo "| ${TREES[$i]} | $(tr ' ' '\n' <<<"${US[$i]}" | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }') |"
done
