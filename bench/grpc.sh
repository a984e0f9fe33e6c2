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
#                 [--rows put,range,range-s,watch,keepalive,keepalive-f] [--watchers 1000] [--members 1|3] [--port-base 24640]
#
# --members 3: three members of each kind (all six at once), every row sent to the leader
# but keepalive-f (three members only): the LeaseKeepAlive stream sent to a follower, which
# forwards the keepalives to the leader's peer port (etcd: one per request, on /leases;
# kvctl: those that arrive during a round trip together, on /leases/batch).
#
# kvctl runs as installed (node dist/bundle/cli/main.js; `node scripts/bundle.mjs` first), or
# the bundle KVCTL_MAIN names. KVCTL_BEFORE=<another build's main.js> adds that build as a
# third server, measured in the same rounds (columns "before").
# Ports 24640-24645 (three members: 24640-24657), inside the bench's range (24600-24699) and
# below the kernel's ephemeral ports; --port-base P moves them to P..P+17 (a machine whose
# other work owns that range); every process started is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."
N=20000; C=8; M=8; ROUNDS=3; MEMBERS=1; PB=24640; ONLY=""; ROWS="put,range,range-s,watch,keepalive"; WATCHERS=1000
while [ $# -gt 0 ]; do
  case "$1" in
    -n) N=$2; shift 2 ;;
    -c) C=$2; shift 2 ;;
    -m) M=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --watchers) WATCHERS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --members) MEMBERS=$2; shift 2 ;;
    --port-base) PB=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ ",$ROWS," != *,keepalive-f,* ]] || [ "$MEMBERS" = 3 ] || { echo "keepalive-f needs --members 3" >&2; exit 2; }
command -v h2load >/dev/null || { echo "h2load missing: apt-get install -y nghttp2-client" >&2; exit 2; }
TMP=$(mktemp -d /tmp/kvctl-grpc-bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
node bench/grpc/frames.mjs "$TMP"
declare -A RES

start() { # kind client-port peer-port [name initial-cluster]
  local kind=$1 cp=$2 pp=$3 name=${4:-b} dir="$TMP/data-$1-${4:-b}"
  local cluster=${5:-b=http://127.0.0.1:$pp}
  rm -rf "$dir"
  local flags=(--name "$name" --data-dir "$dir" --listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp"
    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" --initial-cluster "$cluster")
  local main=${KVCTL_MAIN:-dist/bundle/cli/main.js}
  [ "$kind" = before ] && main=$KVCTL_BEFORE
  if [ "$name" != b ]; then # a member of three: the others start right after it
    if [ "$kind" = etcd ]; then etcd "${flags[@]}" >"$TMP/$kind-$name.log" 2>&1 & PIDS+=($!)
    else node "$main" serve "${flags[@]}" >"$TMP/$kind-$name.log" 2>&1 & PIDS+=($!); fi
    return 0
  fi
  if [ "$kind" = etcd ]; then etcd "${flags[@]}" >"$TMP/$kind.log" 2>&1 & PIDS+=($!)
  else node "$main" serve "${flags[@]}" >"$TMP/$kind.log" 2>&1 & PIDS+=($!); fi
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
[ -n "${KVCTL_BEFORE:-}" ] && KINDS+=(before)
declare -A LEADER FOLLOWER
port() { echo "${LEADER[$1]}"; }
for kind in "${KINDS[@]}"; do
  if [ "$MEMBERS" = 1 ]; then
    case $kind in etcd) cp=$PB ;; kvctl) cp=$((PB + 2)) ;; before) cp=$((PB + 4)) ;; esac
    start "$kind" "$cp" $((cp + 1))
    LEADER[$kind]=$cp
  else
    case $kind in etcd) b=$PB ;; kvctl) b=$((PB + 6)) ;; before) b=$((PB + 12)) ;; esac
    cluster="m0=http://127.0.0.1:$((b + 1)),m1=http://127.0.0.1:$((b + 3)),m2=http://127.0.0.1:$((b + 5))"
    for i in 0 1 2; do start "$kind" $((b + 2 * i)) $((b + 2 * i + 1)) "m$i" "$cluster"; done
    eps="127.0.0.1:$b,127.0.0.1:$((b + 2)),127.0.0.1:$((b + 4))"
    for _ in $(seq 200); do
      ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$b" put bench-key "$(head -c 256 /dev/zero | tr '\0' a)" >/dev/null 2>&1 && break
      sleep 0.1
    done
    # The leader's client port (the endpoint whose member ID is its own leader's), and a follower's.
    read -r LEADER[$kind] FOLLOWER[$kind] < <(ETCDCTL_API=3 etcdctl --endpoints "$eps" endpoint status -w json | node -e '
      let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
        const st = JSON.parse(s);
        const port = (e) => (e ? e.Endpoint.split(":").pop() : "");
        console.log(port(st.find((e) => e.Status.header.member_id === e.Status.leader)), port(st.find((e) => e.Status.header.member_id !== e.Status.leader)));
      });')
    [ -n "${LEADER[$kind]}" ] && [ -n "${FOLLOWER[$kind]}" ] || { echo "$kind: no leader" >&2; exit 1; }
  fi
  cp=${LEADER[$kind]}
  h2load -n 2000 -c "$C" -m "$M" -d "$TMP/range.bin" -H 'content-type: application/grpc' "http://127.0.0.1:$cp/etcdserverpb.KV/Range" >/dev/null 2>&1 # warm-up
  # The forward path is not on the leader's: without this, kvctl's first round is JIT warm-up.
  if [[ ",$ROWS," == *,keepalive-f,* ]] && [ -n "${FOLLOWER[$kind]:-}" ]; then
    node bench/grpc/streams.mjs keepalive "http://127.0.0.1:${FOLLOWER[$kind]}" 2 >/dev/null
  fi
done
measure() { # kind row
  local base="http://127.0.0.1:$(port "$1")"
  case $2 in
    put) h2 "$base/etcdserverpb.KV/Put" "$TMP/put.bin" ;;
    range) h2 "$base/etcdserverpb.KV/Range" "$TMP/range.bin" ;;
    range-s) h2 "$base/etcdserverpb.KV/Range" "$TMP/range-s.bin" ;;
    watch) node bench/grpc/streams.mjs watch "$base" "$WATCHERS" 5 | node -e 'process.stdin.on("data",d=>console.log(JSON.parse(d).ms))' ;;
    keepalive) node bench/grpc/streams.mjs keepalive "$base" 3 | node -e 'process.stdin.on("data",d=>console.log(JSON.parse(d).rps))' ;;
    keepalive-f) node bench/grpc/streams.mjs keepalive "http://127.0.0.1:${FOLLOWER[$1]}" 3 | node -e 'process.stdin.on("data",d=>console.log(JSON.parse(d).rps))' ;;
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
    keepalive-f) echo "LeaseKeepAlive to a follower, one stream, 16 in flight (req/s)" ;;
  esac
}
HEAD="| row ($MEMBERS member$([ "$MEMBERS" = 1 ] || echo s)) | etcd 3.4 | kvctl | kvctl/etcd |"; SEP="|---|---:|---:|---:|"
[ -n "${KVCTL_BEFORE:-}" ] && { HEAD="$HEAD before | before/etcd |"; SEP="$SEP---:|---:|"; }
echo "$HEAD"
echo "$SEP"
ratio() { if [ -n "$1" ] && [ -n "$2" ] && [ "$1" != 0 ]; then awk -v k="$2" -v e="$1" 'BEGIN { printf "%.2f", k / e }'; fi; }
IFS=, read -ra rows <<<"$ROWS"
for row in "${rows[@]}"; do
  e=${RES[etcd,$row]:-}; k=${RES[kvctl,$row]:-}
  line="| $(label "$row") | ${e:--} | ${k:--} | $(ratio "$e" "$k") |"
  if [ -n "${KVCTL_BEFORE:-}" ]; then kb=${RES[before,$row]:-}; line="$line ${kb:--} | $(ratio "$e" "$kb") |"; fi
  echo "$line"
done
