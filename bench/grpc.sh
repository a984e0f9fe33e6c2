#!/usr/bin/env bash
# gRPC figures, kvctl and etcd 3.4 back to back (one member each, the same commands):
# h2load unary rows (Put of a 256-byte value, Range of one key linearizable and
# serializable) with prepared request bodies (grpc/frames.mjs), then 1,000 watchers on
# Watch streams receiving one write and a LeaseKeepAlive stream (grpc/streams.mjs).
# Prints one Markdown table: row | etcd | kvctl | kvctl/etcd.
#
# Both members run at once (idle but for the one measured) and every row is measured
# etcd then kvctl, --rounds times, the table giving each one's median: on a machine
# shared with other work, back to back per row is what keeps the ratio honest.
#
#   bench/grpc.sh [-n requests] [-c conns] [-m streams] [--rounds 3] [--only kvctl|etcd]
#                 [--rows put,range,range-s,watch,keepalive] [--watchers 1000]
#
# kvctl runs as installed (node dist/bundle/cli/main.js; `node scripts/bundle.mjs` first), or
# the bundle KVCTL_MAIN names (another build, to compare before/after).
# Ports 46379-46382; every process started is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."
N=20000; C=8; M=8; ROUNDS=3; ONLY=""; ROWS="put,range,range-s,watch,keepalive"; WATCHERS=1000
while [ $# -gt 0 ]; do
  case "$1" in
    -n) N=$2; shift 2 ;;
    -c) C=$2; shift 2 ;;
    -m) M=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --watchers) WATCHERS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
command -v h2load >/dev/null || { echo "h2load missing: apt-get install -y nghttp2-client" >&2; exit 2; }
TMP=$(mktemp -d /tmp/kvctl-grpc-bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
node bench/grpc/frames.mjs "$TMP"
declare -A RES

start() { # kind client-port peer-port
  local kind=$1 cp=$2 pp=$3 dir="$TMP/data-$1"
  rm -rf "$dir"
  local flags=(--name b --data-dir "$dir" --listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp"
    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "b=http://127.0.0.1:$pp")
  if [ "$kind" = etcd ]; then etcd "${flags[@]}" >"$TMP/$kind.log" 2>&1 & PIDS+=($!)
  else node "${KVCTL_MAIN:-dist/bundle/cli/main.js}" serve "${flags[@]}" >"$TMP/$kind.log" 2>&1 & PIDS+=($!); fi
  for _ in $(seq 100); do
    ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$cp" put bench-key "$(head -c 256 /dev/zero | tr '\0' a)" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$kind did not start" >&2; cat "$TMP/$kind.log" >&2; exit 1
}

h2() { # url body -> req/s
  local out
  out=$(h2load -n "$N" -c "$C" -m "$M" -d "$2" -H 'content-type: application/grpc' -H 'te: trailers' "$1" 2>&1)
  grep -q " 0 failed, 0 errored" <<<"$out" || { echo "$out" >&2; echo 0; return; }
  awk '/^finished in/ { gsub(",", "", $4); print int($4) }' <<<"$out"
}

KINDS=()
for kind in etcd kvctl; do
  [ -n "$ONLY" ] && [ "$ONLY" != "$kind" ] && continue
  KINDS+=("$kind")
done
port() { if [ "$1" = etcd ]; then echo 46379; else echo 46381; fi; }
for kind in "${KINDS[@]}"; do
  cp=$(port "$kind")
  start "$kind" "$cp" $((cp + 1))
  h2load -n 2000 -c "$C" -m "$M" -d "$TMP/range.bin" -H 'content-type: application/grpc' "http://127.0.0.1:$cp/etcdserverpb.KV/Range" >/dev/null 2>&1 # warm-up
done
measure() { # kind row
  local base="http://127.0.0.1:$(port "$1")"
  case $2 in
    put) h2 "$base/etcdserverpb.KV/Put" "$TMP/put.bin" ;;
    range) h2 "$base/etcdserverpb.KV/Range" "$TMP/range.bin" ;;
    range-s) h2 "$base/etcdserverpb.KV/Range" "$TMP/range-s.bin" ;;
    watch) node bench/grpc/streams.mjs watch "$base" "$WATCHERS" 5 | node -e 'process.stdin.on("data",d=>console.log(JSON.parse(d).ms))' ;;
    keepalive) node bench/grpc/streams.mjs keepalive "$base" 3 | node -e 'process.stdin.on("data",d=>console.log(JSON.parse(d).rps))' ;;
  esac
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
IFS=, read -ra rows <<<"$ROWS"
for row in "${rows[@]}"; do
  for ((r = 1; r <= ROUNDS; r++)); do
    for kind in "${KINDS[@]}"; do
      echo "$kind $row round $r ..." >&2
      v=$(measure "$kind" "$row")
      echo "  $v" >&2
      RES[$kind,$row]="${RES[$kind,$row]:-} $v"
    done
  done
  for kind in "${KINDS[@]}"; do RES[$kind,$row]=$(median <<<"${RES[$kind,$row]}"); done
done

label() {
  case $1 in
    put) echo "Put, 256-byte value (req/s, $C conns × $M streams)" ;;
    range) echo "Range one key, linearizable (req/s)" ;;
    range-s) echo "Range one key, serializable (req/s)" ;;
    watch) echo "$WATCHERS watchers, one write: all notified (ms, lower is better)" ;;
    keepalive) echo "LeaseKeepAlive, one stream, 16 in flight (req/s)" ;;
  esac
}
echo "| row | etcd 3.4 | kvctl | kvctl/etcd |"
echo "|---|---:|---:|---:|"
IFS=, read -ra rows <<<"$ROWS"
for row in "${rows[@]}"; do
  e=${RES[etcd,$row]:-}; k=${RES[kvctl,$row]:-}
  ratio=""
  if [ -n "$e" ] && [ -n "$k" ] && [ "$e" != 0 ]; then ratio=$(awk -v k="$k" -v e="$e" 'BEGIN { printf "%.2f", k / e }'); fi
  echo "| $(label "$row") | ${e:--} | ${k:--} | $ratio |"
done
