#!/usr/bin/env bash
# Server CPU per gRPC call, builds side by side: etcd 3.4, kvctl (this tree's bundle) and
# optionally a "before" build (KVCTL_BEFORE=<main.js>), one member each, all running at
# once. For each row and round, each server in turn gets the same fixed h2load run and
# the CPU it used is read from /proc (utime+stime): the whole process, and for kvctl its
# main thread alone (/proc/<pid>/task/<pid>/stat; etcd has no main thread to speak of).
# Prints µs per call, the median over rounds, and req/s. On a shared machine req/s swings
# with the load; CPU per call much less.
#
#   bench/grpc/cpu.sh [-n 20000] [-c 8] [-m 8] [--rounds 5] [--rows put,range,range-s,range-100,watch-open] [--port-base 21640]
#
# range-100: a serializable Range of 100 keys of 1 KiB values (put before the rounds), where
# encoding the RangeResponse is a larger share of the call than for one key.
#
# watch-open: 1,000 watchers on their own Watch streams (grpc/streams.mjs watch, one put
# to all of them, then closed): CPU per watcher, the streams' opening and `created`
# answers most of it.
#
# Ports P..P+5 (default 21640); every process started is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=20000; C=8; M=8; ROUNDS=5; ROWS="put,range,range-s"; PB=21640
while [ $# -gt 0 ]; do
  case "$1" in
    -n) N=$2; shift 2 ;;
    -c) C=$2; shift 2 ;;
    -m) M=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --port-base) PB=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
TMP=$(mktemp -d /tmp/kvctl-grpc-cpu.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
node bench/grpc/frames.mjs "$TMP"
declare -A PID PORT
KINDS=(etcd kvctl)
[ -n "${KVCTL_BEFORE:-}" ] && KINDS+=(before)
i=0
for kind in "${KINDS[@]}"; do
  cp=$((PB + 2 * i)); pp=$((cp + 1)); i=$((i + 1)); dir="$TMP/data-$kind"
  flags=(--name b --data-dir "$dir" --listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp"
    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "b=http://127.0.0.1:$pp")
  case $kind in
    etcd) etcd "${flags[@]}" >"$TMP/$kind.log" 2>&1 & ;;
    kvctl) node "${KVCTL_MAIN:-dist/bundle/cli/main.js}" serve "${flags[@]}" >"$TMP/$kind.log" 2>&1 & ;;
    before) node "$KVCTL_BEFORE" serve "${flags[@]}" >"$TMP/$kind.log" 2>&1 & ;;
  esac
  PID[$kind]=$!; PIDS+=($!); PORT[$kind]=$cp
  ok=""
  for _ in $(seq 100); do
    ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$cp" put bench-key "$(head -c 256 /dev/zero | tr '\0' a)" >/dev/null 2>&1 && { ok=1; break; }
    sleep 0.1
  done
  [ -n "$ok" ] || { echo "$kind did not start" >&2; cat "$TMP/$kind.log" >&2; exit 1; }
  if [[ ",$ROWS," == *,range-100,* ]]; then
    v=$(head -c 1024 /dev/zero | tr '\0' v)
    for k in $(seq -w 0 99); do ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$cp" put "bench-range/0$k" "$v" >/dev/null; done
  fi
done
# A kvctl member's main thread is its process's first task (the same id); workers, GC and
# compiler threads are the others.
ticks() { # pid [main] -> clock ticks of utime+stime
  local f=/proc/$1/stat
  [ "${2:-}" = main ] && f=/proc/$1/task/$1/stat
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "$f"
}
HZ=$(getconf CLK_TCK)
path() { case $1 in put) echo "etcdserverpb.KV/Put put.bin" ;; range) echo "etcdserverpb.KV/Range range.bin" ;; range-s) echo "etcdserverpb.KV/Range range-s.bin" ;; range-100) echo "etcdserverpb.KV/Range range-100.bin" ;; esac; }
run() { # kind row -> "req/s total-µs main-µs"
  local p b out t0 m0 t1 m1
  if [ "$2" = watch-open ]; then # 1,000 Watch streams opened, one put to all, closed: CPU per watcher
    t0=$(ticks "${PID[$1]}"); m0=$(ticks "${PID[$1]}" main)
    node bench/grpc/streams.mjs watch "http://127.0.0.1:${PORT[$1]}" 1000 1 >/dev/null
    sleep 0.5 # the streams' teardown
    t1=$(ticks "${PID[$1]}"); m1=$(ticks "${PID[$1]}" main)
    awk -v hz="$HZ" -v t="$((t1 - t0))" -v m="$((m1 - m0))" 'BEGIN { printf "0 %.1f %.1f\n", t * 1e6 / hz / 1000, m * 1e6 / hz / 1000 }'
    return
  fi
  read -r p b <<<"$(path "$2")"
  t0=$(ticks "${PID[$1]}"); m0=$(ticks "${PID[$1]}" main)
  out=$(h2load -n "$N" -c "$C" -m "$M" -d "$TMP/$b" -H 'content-type: application/grpc' -H 'te: trailers' "http://127.0.0.1:${PORT[$1]}/$p" 2>&1)
  t1=$(ticks "${PID[$1]}"); m1=$(ticks "${PID[$1]}" main)
  grep -q " 0 failed, 0 errored" <<<"$out" || { echo "$out" >&2; echo "0 0 0"; return; }
  awk -v n="$N" -v hz="$HZ" -v t="$((t1 - t0))" -v m="$((m1 - m0))" '/^finished in/ { gsub(",", "", $4); printf "%d %.1f %.1f\n", $4, t * 1e6 / hz / n, m * 1e6 / hz / n }' <<<"$out"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
# Warm-up: every server and row once, unmeasured (kvctl's first thousands of calls are JIT).
IFS=, read -ra rows <<<"$ROWS"
for kind in "${KINDS[@]}"; do for row in "${rows[@]}"; do run "$kind" "$row" >/dev/null; done; done
declare -A RPS TOT MAIN
for row in "${rows[@]}"; do
  for ((r = 1; r <= ROUNDS; r++)); do
    for kind in "${KINDS[@]}"; do
      read -r rps tot main <<<"$(run "$kind" "$row")"
      echo "$row round $r $kind: $rps req/s, $tot µs/call (main thread $main)" >&2
      RPS[$kind,$row]="${RPS[$kind,$row]:-} $rps"; TOT[$kind,$row]="${TOT[$kind,$row]:-} $tot"; MAIN[$kind,$row]="${MAIN[$kind,$row]:-} $main"
    done
  done
done
echo "| row | server | CPU µs/call (process) | main thread µs/call | req/s |"
echo "|---|---|---:|---:|---:|"
for row in "${rows[@]}"; do
  for kind in "${KINDS[@]}"; do
    m=$(median <<<"${MAIN[$kind,$row]}"); [ "$kind" = etcd ] && m="-"
    echo "| $row | $kind | $(median <<<"${TOT[$kind,$row]}") | $m | $(median <<<"${RPS[$kind,$row]}") |"
  done
done
