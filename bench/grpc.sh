#!/usr/bin/env bash
# gRPC figures, kvctl and etcd 3.4 back to back (one member each, the same commands):
# h2load unary rows (Put of a 256-byte value, Range of one key linearizable and
# serializable) with prepared request bodies (grpc/frames.mjs), then 1,000 watchers on
# Watch streams receiving one write and a LeaseKeepAlive stream (grpc/streams.mjs).
# Prints one Markdown table: row | etcd | kvctl | kvctl/etcd.
#
#   bench/grpc.sh [-n requests] [-c conns] [-m streams] [--only kvctl|etcd] [--rows put,range,range-s,watch,keepalive]
#
# kvctl runs as installed (node dist/bundle/cli/main.js; `node scripts/bundle.mjs` first).
# Ports 46379-46382; every process started is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."
N=100000; C=8; M=8; ONLY=""; ROWS="put,range,range-s,watch,keepalive"; WATCHERS=1000
while [ $# -gt 0 ]; do
  case "$1" in
    -n) N=$2; shift 2 ;;
    -c) C=$2; shift 2 ;;
    -m) M=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --watchers) WATCHERS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
command -v h2load >/dev/null || { echo "h2load missing: apt-get install -y nghttp2-client" >&2; exit 2; }
TMP=$(mktemp -d /tmp/kvctl-grpc-bench.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
node bench/grpc/frames.mjs "$TMP"
declare -A RES

start() { # kind client-port peer-port
  local kind=$1 cp=$2 pp=$3 dir="$TMP/data-$1"
  rm -rf "$dir"
  local flags=(--name b --data-dir "$dir" --listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp"
    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "b=http://127.0.0.1:$pp")
  if [ "$kind" = etcd ]; then etcd "${flags[@]}" >"$TMP/$kind.log" 2>&1 & PID=$!
  else node dist/bundle/cli/main.js serve "${flags[@]}" >"$TMP/$kind.log" 2>&1 & PID=$!; fi
  for _ in $(seq 100); do
    ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$cp" put bench-key "$(head -c 256 /dev/zero | tr '\0' a)" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$kind did not start" >&2; cat "$TMP/$kind.log" >&2; exit 1
}
stopit() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""; }

h2() { # url body -> req/s
  local out
  out=$(h2load -n "$N" -c "$C" -m "$M" -d "$2" -H 'content-type: application/grpc' -H 'te: trailers' "$1" 2>&1)
  grep -q " 0 failed, 0 errored" <<<"$out" || { echo "$out" >&2; echo 0; return; }
  awk '/^finished in/ { gsub(",", "", $4); print int($4) }' <<<"$out"
}

for kind in etcd kvctl; do
  [ -n "$ONLY" ] && [ "$ONLY" != "$kind" ] && continue
  if [ "$kind" = etcd ]; then cp=46379; pp=46380; else cp=46381; pp=46382; fi
  start "$kind" $cp $pp
  base="http://127.0.0.1:$cp"
  h2load -n 2000 -c "$C" -m "$M" -d "$TMP/range.bin" -H 'content-type: application/grpc' "$base/etcdserverpb.KV/Range" >/dev/null 2>&1 # warm-up
  IFS=, read -ra rows <<<"$ROWS"
  for row in "${rows[@]}"; do
    echo "$kind $row ..." >&2
    case $row in
      put) RES[$kind,$row]=$(h2 "$base/etcdserverpb.KV/Put" "$TMP/put.bin") ;;
      range) RES[$kind,$row]=$(h2 "$base/etcdserverpb.KV/Range" "$TMP/range.bin") ;;
      range-s) RES[$kind,$row]=$(h2 "$base/etcdserverpb.KV/Range" "$TMP/range-s.bin") ;;
      watch) RES[$kind,$row]=$(node bench/grpc/streams.mjs watch "$base" "$WATCHERS" 5 | node -e 'process.stdin.on("data",d=>console.log(JSON.parse(d).ms))') ;;
      keepalive) RES[$kind,$row]=$(node bench/grpc/streams.mjs keepalive "$base" 5 | node -e 'process.stdin.on("data",d=>console.log(JSON.parse(d).rps))') ;;
    esac
  done
  stopit
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
