#!/usr/bin/env bash
# etcd 3.4's operations procedures (runtime-configuration, recovery, maintenance, learner),
# driven by etcdctl 3.4.23 against a cluster of `etcd` or of `kvctl serve` started with the
# same flags. One line per step: the step, the exit code, stdout and stderr with member and
# cluster ids, ports, times, sizes, revisions and raft indexes masked, so that the output
# against etcd and against kvctl can be diffed (ops.etcd.expected.txt is etcd's).
#
# Usage: ops.sh <etcd|kvctl> <port base> [sections]
#   port base: 40 ports from it are used (clients base+2i, peers base+2i+1, i = 1..19)
#   sections: any of "reconfig maint dr restart" (default: all)
# KVCTL (default: the checkout's bin/kvctl) is the kvctl to run.
set -uo pipefail
kind=$1
base=$2
sections=${3:-"reconfig maint dr restart"}
here=$(cd "$(dirname "$0")" && pwd)
KVCTL=${KVCTL:-$here/../../bin/kvctl}
work=$(mktemp -d /tmp/ops-scenario.XXXXXX)
declare -A pid=()
cleanup() {
  for s in "${!pid[@]}"; do kill -9 "${pid[$s]}" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
export ETCDCTL_API=3
ids=$work/ids.sed # learned id -> name rewrites
: >"$ids"

if [ "$kind" = etcd ]; then
  SERVER=(etcd)
  PREFIX=ETCD_
else
  SERVER=(node "$KVCTL" serve)
  PREFIX=KV_
fi

cport() { echo $((base + 2 * $1)); }
pport() { echo $((base + 2 * $1 + 1)); }
curl_() { echo "http://127.0.0.1:$(cport "$1")"; }
purl() { echo "http://127.0.0.1:$(pport "$1")"; }

# Masks: ports by member slot, learned ids by name, the work dir, and the numbers that
# differ from run to run (times, sizes, terms, indexes).
norm() {
  local args=()
  for i in $(seq 1 19); do
    args+=(-e "s/(127\.0\.0\.1|localhost):$(cport "$i")\b/<c$i>/g" -e "s/(127\.0\.0\.1|localhost):$(pport "$i")\b/<p$i>/g")
  done
  sed -E "${args[@]}" -f "$ids" -e "s|$work|WORK|g" \
    -e 's/Member [0-9a-f]+ added/Member <id?> added/' -e 's/member [0-9a-f]+ of cluster [0-9a-f]+/member <id?> of cluster <id?>/' -e 's/\b[0-9a-f]{16}\b/<id?>/g' -e 's/\b[0-9a-f]{13,15}\b/<id?>/g' \
    -e 's/\b[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9.]+ ([CEINW]) \|/<time> \1 |/g' \
    -e 's/took = [0-9.]+(µs|ms|s|ns)/took = T/g' -e 's/"took":"[^"]*"/"took":"T"/g' \
    -e 's/[0-9.]+ ?(kB|MB|B|GB)\b/SIZE/g' -e 's/"dbSize(InUse)?":[0-9]+/"dbSize\1":SIZE/g' \
    -e 's/"(raft_term|raftTerm|raftIndex|raftAppliedIndex|revision|raft_index)":[0-9]+/"\1":N/g' \
    -e 's/  +/ /g' -e 's/---+/---/g' \
    -e 's/\| [0-9]+ \| [0-9]+ \| [0-9]+ \|/| N | N | N |/' -e 's/, [0-9]+, [0-9]+, [0-9]+, /, N, N, N, /' \
    -e 's/\| true \| [0-9.]+(µs|ms|s) \|/| true | T |/' |
    perl -pe 's/(INITIAL_CLUSTER=")([^"]*)/$1.join(",", sort split(",", $2))/e'
}

# step NAME CMD...: runs CMD, prints "NAME | rc=N | out | err" (lines joined by ' / ').
# Log lines etcdctl writes itself (JSON, with times) are reduced to level and msg.
step() {
  local name=$1
  shift
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  finish "$name" "$rc"
}
finish() {
  local o e
  o=$(norm <"$work/out" | tr '\n' '~' | sed -e 's/~$//' -e 's/~/ \/ /g')
  e=$(jqlog <"$work/err" | uniq | norm | tr '\n' '~' | sed -e 's/~$//' -e 's/~/ \/ /g')
  printf '[%s] %s | rc=%s | %s | %s\n' "$sec" "$1" "$2" "$o" "$e"
}
jqlog() {
  while IFS= read -r line; do
    if [[ $line == '{"level"'* ]]; then
      printf '%s\n' "$line" | jq -c '{level, msg}' 2>/dev/null || printf '%s\n' "$line"
    else
      printf '%s\n' "$line"
    fi
  done
}
# Sorted variant (member tables: order is by random member id).
step_sorted() {
  local name=$1
  shift
  "$@" >"$work/raw" 2>"$work/err.raw"
  local rc=$?
  norm <"$work/raw" | sort >"$work/out"
  norm <"$work/err.raw" | sort >"$work/err"
  ids_sorted=1 finish "$name" "$rc"
}
note() { printf '## [%s] %s\n' "$sec" "$*"; }
# Lines the comparison leaves out: measurements that differ by design (sizes, times).
info() { printf '# info: [%s] %s\n' "$sec" "$*"; }
sec=none

ctl() { etcdctl --dial-timeout=3s --command-timeout=10s "$@"; }
# Learns the ids of the members a cluster lists: each id (hex, decimal) becomes the slot of
# its first peer URL; the cluster id becomes <cluster>.
learn() { # $1: a live endpoint
  local cid
  cid=$(ctl --endpoints="$1" member list -w json 2>/dev/null | grep -o '"cluster_id":[0-9]*' | cut -d: -f2)
  [ -n "$cid" ] && printf 's/\\b%s\\b/<cluster>/g\ns/\\b%s\\b/<cluster>/g\n' "$cid" "$(python3 -c "print('%x' % $cid)")" >>"$ids"
  ctl --endpoints="$1" member list 2>/dev/null | awk -F', ' '{ print $1, $4 }' | while read -r id url; do
    [[ $id =~ ^[0-9a-f]+$ ]] || continue
    local port=${url##*:}
    [[ $port =~ ^[0-9]+$ ]] || continue
    local slot=$(((port - base - 1) / 2))
    printf 's/\\b%s\\b/<m%s>/g\ns/\\b%s\\b/<m%s>/g\n' "$id" "$slot" "$(python3 -c "print(int('$id', 16))")" "$slot" >>"$ids"
  done
}
# alias_id HEXID NAME: names an id by its role (applied before the slot names)
alias_id() {
  { printf 's/\\b%s\\b/<%s>/g\n' "$1" "$2"; cat "$ids"; } >"$ids.new" && mv "$ids.new" "$ids"
}
# idof ENDPOINTS NAME|PEERURL: the hex id of a listed member
idof() {
  local t
  for t in 1 2 3 4 5; do
    ctl --endpoints="$1" member list 2>/dev/null | awk -F', ' -v w="$2" '$3 == w || $4 == w { print $1; f = 1 } END { exit !f }' && return 0
    sleep 1
  done
}
# own_id ENDPOINT: the hex id of the member at ENDPOINT
own_id() { ctl --endpoints="$1" endpoint status | awk -F', ' '{ print $2 }'; }
# until_ok CMD...: etcd refuses member changes for 5 s after its peers connected
# ("unhealthy cluster"); retried for up to 15 s, the last answer kept in WORK/out, err.
until_ok() {
  local t=0 rc
  while :; do
    "$@" >"$work/out.u" 2>"$work/err.u"
    rc=$?
    if [ $rc = 0 ] || ! grep -q "unhealthy cluster" "$work/err.u" || [ $t -ge 60 ]; then break; fi
    sleep 0.25
    t=$((t + 1))
  done
  cat "$work/out.u"
  cat "$work/err.u" >&2
  return $rc
}

# start SLOT STATE CLUSTER [extra flags...]: a member named m<SLOT> with data in WORK/m<SLOT>.
start() {
  local s=$1 state=$2 cluster=$3
  shift 3
  "${SERVER[@]}" --name "m$s" --data-dir "$work/m$s" \
    --listen-client-urls "$(curl_ "$s")" --advertise-client-urls "$(curl_ "$s")" \
    --listen-peer-urls "$(purl "$s")" --initial-advertise-peer-urls "$(purl "$s")" \
    --initial-cluster "$cluster" --initial-cluster-token ops --initial-cluster-state "$state" \
    --enable-v2=true "$@" >"$work/m$s.log" 2>&1 &
  pid[$s]=$!
}
# start_env SLOT FILE [extra flags]: a member whose ETCD_* settings are in FILE (member
# add's output, with the prefix renamed for kvctl), started as the docs say.
start_env() {
  local s=$1 file=$2
  shift 2
  (
    set -a
    # shellcheck disable=SC1090
    . <(grep -E '^ETCD_' "$file" | sed "s/^ETCD_/$PREFIX/")
    set +a
    exec "${SERVER[@]}" --data-dir "$work/m$s" \
      --listen-client-urls "$(curl_ "$s")" --advertise-client-urls "$(curl_ "$s")" \
      --listen-peer-urls "$(purl "$s")" --enable-v2=true "$@"
  ) >"$work/m$s.log" 2>&1 &
  pid[$s]=$!
}
cl() { # initial cluster of slots: cl 1 2 3
  local out="" s
  for s in "$@"; do out+="${out:+,}m$s=$(purl "$s")"; done
  echo "$out"
}
eps() {
  local out="" s
  for s in "$@"; do out+="${out:+,}$(curl_ "$s")"; done
  echo "$out"
}
healthy() { # waits until slot answers health (max $2 s, default 20), or its process ended
  local s=$1 end=$((SECONDS + ${2:-20}))
  while [ $SECONDS -lt $end ]; do
    kill -0 "${pid[$s]:-0}" 2>/dev/null || { note "!! m$s exited"; info "m$s: $(keyline "$s")"; return 1; }
    etcdctl --dial-timeout=1s --command-timeout=2s --endpoints="$(curl_ "$s")" endpoint health >/dev/null 2>&1 && return 0
    sleep 0.25
  done
  note "!! m$s not healthy after ${2:-20}s"
  return 1
}
# exited SLOT MAX: prints "m<s> exited rc=N" once the process ended, or "m<s> running".
exited() {
  local s=$1 max=$2 t=0
  while [ "$t" -lt $((max * 4)) ]; do
    if ! kill -0 "${pid[$s]}" 2>/dev/null; then
      wait "${pid[$s]}"
      echo "m$s exited rc=$?"
      unset "pid[$s]"
      return 0
    fi
    sleep 0.25
    t=$((t + 1))
  done
  echo "m$s running after ${max}s"
}
stop() { # SIGTERM, wait
  local s=$1
  [ -n "${pid[$s]:-}" ] || return 0
  kill "${pid[$s]}" 2>/dev/null
  wait "${pid[$s]}" 2>/dev/null
  unset "pid[$s]"
}
kill9() {
  local s=$1
  [ -n "${pid[$s]:-}" ] || return 0
  kill -9 "${pid[$s]}" 2>/dev/null
  wait "${pid[$s]}" 2>/dev/null
  unset "pid[$s]"
}
leader_of() { # endpoint list -> slot of the leader
  local ep
  ep=$(ctl --endpoints="$1" endpoint status 2>/dev/null | awk -F', ' '$5 == "true" { print $1 }' | head -1)
  [ -n "$ep" ] || { echo 0; return; }
  echo $(((${ep##*:} - base) / 2))
}
wait_leader() { # endpoint list: waits until one reports itself leader
  local t=0 l
  while [ $t -lt 80 ]; do
    l=$(leader_of "$1")
    [ "$l" -gt 0 ] 2>/dev/null && { echo "$l"; return 0; }
    sleep 0.25
    t=$((t + 1))
  done
  echo 0
}
# last log line of a member that names why it stopped (etcd: capnslog "C |"/"E |" or zap
# "fatal"; kvctl: its error line), the time prefix removed
keyline() {
  grep -E ' C \| |"level":"(fatal|panic)"|fatal|error|Error|^kvctl serve: ' "$work/m$1.log" | tail -1 |
    sed -E -e 's/^[0-9-]+ [0-9:.]+ //' -e 's/"ts":"[^"]*",?//' | norm
}
# number of members a list shows, and how many of them learners
count_members() {
  ctl --endpoints="$1" member list -w json | jq -r '"members=\(.members | length) learners=\([.members[] | select(.isLearner == true)] | length) started=\([.members[] | select(.name != "" and .name != null)] | length)"'
}

if [[ $sections == *reconfig* ]]; then
  sec=reconfig
  SECONDS=0
  note "1. runtime reconfiguration"
  for s in 1 2 3; do start "$s" new "$(cl 1 2 3)"; done
  for s in 1 2 3; do healthy "$s"; done
  learn "$(curl_ 1)"
  E=$(eps 1 2 3)
  step "put a" ctl --endpoints="$E" put a 1
  step_sorted "member list -w table" ctl --endpoints="$(curl_ 1)" member list -w table
  step "member list -w json (members)" sh -c "etcdctl --endpoints=$(curl_ 2) member list -w json | jq -c '[.members[] | {name, peerURLs, clientURLs, isLearner}] | sort_by(.name)'"
  step "member list -w json (header keys)" sh -c "etcdctl --endpoints=$(curl_ 2) member list -w json | jq -c '.header | keys'"
  step_sorted "member list (simple)" ctl --endpoints="$(curl_ 3)" member list

  # add m4, start it from the printed settings
  step "member add m4" until_ok ctl --endpoints="$E" member add m4 --peer-urls="$(purl 4)"
  cp "$work/out" "$work/add4.txt"
  learn "$(curl_ 1)"
  finish "member add m4 (again, ids learned)" 0
  step_sorted "member list: m4 unstarted" ctl --endpoints="$(curl_ 1)" member list
  start_env 4 "$work/add4.txt"
  healthy 4
  step_sorted "member list: m4 started" ctl --endpoints="$(curl_ 4)" member list
  step "m4 has a" ctl --endpoints="$(curl_ 4)" get a --consistency=s
  # update m4's peer URL: stop it, update, start it on the new port (its data dir holds the rest)
  stop 4
  m4id=$(idof "$E" m4)
  step "member update m4 peer url" until_ok ctl --endpoints="$E" member update "$m4id" --peer-urls="http://127.0.0.1:$(pport 19)"
  (exec "${SERVER[@]}" --name m4 --data-dir "$work/m4" --listen-client-urls "$(curl_ 4)" --advertise-client-urls "$(curl_ 4)" \
    --listen-peer-urls "http://127.0.0.1:$(pport 19)" --enable-v2=true >"$work/m4.log" 2>&1) &
  pid[4]=$!
  healthy 4
  step_sorted "member list: m4 updated" ctl --endpoints="$(curl_ 4)" member list
  step "put b via m4" ctl --endpoints="$(curl_ 4)" put b 2
  # remove a follower (m4): it stops by itself
  step "member remove m4 (follower)" until_ok ctl --endpoints="$(curl_ 1)" member remove "$m4id"
  step "m4 process" exited 4 15
  step_sorted "member list after remove" ctl --endpoints="$E" member list

  # replace a failed member: kill -9 m3, remove it, wipe its dir, add it back, start with existing
  # (m3 a follower: the leader moved away first if it was m3)
  if [ "$(wait_leader "$E")" = 3 ]; then ctl --endpoints="$(curl_ 3)" move-leader "$(idof "$E" m1)" >/dev/null; fi
  kill9 3
  m3id=$(idof "$(eps 1 2)" m3)
  step "member remove failed m3" until_ok ctl --endpoints="$(eps 1 2)" member remove "$m3id"
  rm -rf "$work/m3"
  step "member add m3 again (same peer URL)" until_ok ctl --endpoints="$(eps 1 2)" member add m3 --peer-urls="$(purl 3)"
  cp "$work/out" "$work/add3.txt"
  learn "$(curl_ 1)"
  start_env 3 "$work/add3.txt"
  healthy 3
  step_sorted "member list: m3 replaced" ctl --endpoints="$(curl_ 3)" member list
  step "m3 has a and b" ctl --endpoints="$(curl_ 3)" get a b --consistency=s
  step "m3 has a, b (range)" ctl --endpoints="$(curl_ 3)" get "" --prefix --keys-only

  # learner
  step "member add m5 --learner" until_ok ctl --endpoints="$E" member add m5 --learner --peer-urls="$(purl 5)"
  cp "$work/out" "$work/add5.txt"
  learn "$(curl_ 1)"
  m5id=$(idof "$E" "$(purl 5)")
  step_sorted "member list: learner unstarted" ctl --endpoints="$(curl_ 1)" member list -w table
  step "member promote m5 before it started" ctl --endpoints="$E" member promote "$m5id"
  step "member add m6 --learner (too many)" ctl --endpoints="$E" member add m6 --learner --peer-urls="$(purl 6)"
  start_env 5 "$work/add5.txt"
  t=0
  until ctl --endpoints="$(curl_ 5)" get a --consistency=s 2>/dev/null | grep -q a || [ $t -gt 80 ]; do sleep 0.25; t=$((t + 1)); done
  step "learner serves a serializable get" ctl --endpoints="$(curl_ 5)" get a --consistency=s
  step "learner refuses a linearizable get" ctl --endpoints="$(curl_ 5)" get a
  step "learner refuses a put" ctl --endpoints="$(curl_ 5)" put x 1
  step "endpoint status of the learner (isLearner)" sh -c "etcdctl --endpoints=$(curl_ 5) endpoint status -w json | jq -c '.[].Status | {isLearner: (.isLearner // false)}'"
  t=0
  until ctl --endpoints="$E" member promote "$m5id" >"$work/out" 2>"$work/err" || [ $t -gt 40 ]; do sleep 0.5; t=$((t + 1)); done
  finish "member promote m5 once caught up" $?
  step "member promote m5 again (a voter)" ctl --endpoints="$E" member promote "$m5id"
  step "count" count_members "$E"
  step "member remove 1234abcd (no such member)" ctl --endpoints="$E" member remove 1234abcd
  step "member promote 1234abcd (no such member)" ctl --endpoints="$E" member promote 1234abcd
  step "member update 1234abcd (no such member)" ctl --endpoints="$E" member update 1234abcd --peer-urls="$(purl 18)"
  step "member add dup (m1's peer URL)" ctl --endpoints="$E" member add dup --peer-urls="$(purl 1)"
  step "member add dup learner (m2's peer URL)" ctl --endpoints="$E" member add dup --learner --peer-urls="$(purl 2)"
  step "member update m5 to m1's peer URL" ctl --endpoints="$E" member update "$m5id" --peer-urls="$(purl 1)"
  step "member add without peer urls" ctl --endpoints="$E" member add nop
  step "member add bad url" ctl --endpoints="$E" member add bad --peer-urls=notaurl

  # remove the leader: it steps down and stops; the others elect a new one
  E=$(eps 1 2 3 5)
  L=$(wait_leader "$E")
  Lid=$(own_id "$(curl_ "$L")")
  alias_id "$Lid" leader
  step "member remove the leader" until_ok ctl --endpoints="$(curl_ "$L")" member remove "$Lid"
  exited "$L" 20 >"$work/out.x"
  sed 's/^m[0-9]* /leader /' "$work/out.x" >"$work/out"
  finish "leader process" 0
  rest=()
  for s in 1 2 3 5; do [ "$s" != "$L" ] && rest+=("$s"); done
  E=$(eps "${rest[@]}")
  NL=$(wait_leader "$E")
  [ "$NL" -gt 0 ] && note "a new leader among the rest" || note "!! no new leader"
  step "put c after the leader left" ctl --endpoints="$E" put c 3
  step "count after leader removal" count_members "$E"
  for s in "${rest[@]}"; do stop "$s"; done
  info "elapsed ${SECONDS}s"
fi

if [[ $sections == *maint* ]]; then
  sec=maint
  SECONDS=0
  note "2. maintenance"
  for s in 7 8 9; do start "$s" new "$(cl 7 8 9)"; done
  for s in 7 8 9; do healthy "$s"; done
  learn "$(curl_ 7)"
  E=$(eps 7 8 9)
  for k in 1 2 3; do ctl --endpoints="$E" put "k$k" "v$k" >/dev/null; done
  L=$(wait_leader "$E")
  F=7
  [ "$L" = 7 ] && F=8
  O=9
  [ "$L" = 9 ] && O=8
  [ "$F" = 8 ] && [ "$O" = 8 ] && O=9
  Fid=$(own_id "$(curl_ "$F")")
  Oid=$(own_id "$(curl_ "$O")")
  # follower ids as names independent of which member leads
  printf 's/\\b%s\\b/<follower>/g\ns/\\b%s\\b/<other>/g\n' "$Fid" "$Oid" >"$work/roles.sed"
  Lid=$(own_id "$(curl_ "$L")")
  printf 's/\\b%s\\b/<leader>/g\n' "$Lid" >>"$work/roles.sed"
  cat "$work/roles.sed" "$ids" >"$work/ids2" && cp "$work/ids2" "$ids"
  printf 's/<c%s>/<c:leader>/g\ns/<c%s>/<c:follower>/g\ns/<c%s>/<c:other>/g\n' "$L" "$F" "$O" >>"$ids"
  step_sorted "endpoint status --cluster -w table" ctl --endpoints="$(curl_ 7)" endpoint status --cluster -w table
  step_sorted "endpoint status --cluster -w json (shape)" sh -c "etcdctl --endpoints=$(curl_ 8) endpoint status --cluster -w json | jq -c '.[] | {Endpoint, version: .Status.version, learner: (.Status.isLearner // false), keys: (.Status | keys), hk: (.Status.header | keys)}'"
  step_sorted "endpoint health --cluster -w table" ctl --endpoints="$(curl_ 7)" endpoint health --cluster -w table
  step_sorted "endpoint health --cluster -w json" sh -c "etcdctl --endpoints=$(curl_ 7) endpoint health --cluster -w json | jq -c '.[] | del(.took)'"
  step_sorted "endpoint health --cluster" ctl --endpoints="$(curl_ 9)" endpoint health --cluster
  step_sorted "endpoint hashkv --cluster" sh -c "etcdctl --endpoints=$(curl_ 9) endpoint hashkv --cluster -w json | jq -c '.[] | {Endpoint, hash: .HashKV.hash, compact_revision: .HashKV.compact_revision}'"
  step "move-leader via a follower (not leader)" ctl --endpoints="$(curl_ "$F")" move-leader "$Oid"
  step "move-leader to a follower" ctl --endpoints="$E" move-leader "$Fid"
  step "move-leader to itself" ctl --endpoints="$E" move-leader "$Fid"
  step "move-leader to no member" ctl --endpoints="$E" move-leader 1234abcd
  NL=$(wait_leader "$E")
  [ "$NL" = "$F" ] && note "leader is now the follower chosen" || note "!! leader is m$NL, not m$F"
  step "alarm list (none)" ctl --endpoints="$E" alarm list
  for k in 1 2 3; do ctl --endpoints="$E" put "k$k" "w$k" >/dev/null; done
  rev=$(ctl --endpoints="$E" get k1 -w json | jq -r '.header.revision')
  step "compaction --physical (latest)" ctl --endpoints="$E" compaction --physical "$rev"
  step "get k1 at a compacted revision" ctl --endpoints="$E" get k1 --rev=2
  step "compaction again (same rev)" ctl --endpoints="$E" compaction "$rev"
  step "compaction in the future" ctl --endpoints="$E" compaction 100000
  step_sorted "defrag --cluster" ctl --endpoints="$(curl_ 7)" defrag --cluster
  step "defrag (one)" ctl --endpoints="$(curl_ "$O")" defrag
  step "get k after defrag" ctl --endpoints="$E" get k1 k4
  for s in 7 8 9; do stop "$s"; done

  note "2b. quota: NOSPACE, compact, defrag, disarm"
  start 10 new "$(cl 10)" --quota-backend-bytes=1500000
  healthy 10
  learn "$(curl_ 10)"
  head -c 200000 /dev/zero | tr '\0' x >"$work/big"
  n=0
  while [ $n -lt 60 ]; do
    ctl --endpoints="$(curl_ 10)" put big <"$work/big" >"$work/out" 2>"$work/err" || break
    n=$((n + 1))
  done
  finish "put 200 kB values until refused" 1
  [ $n -ge 2 ] && [ $n -lt 60 ] && note "refused after some puts" || note "!! refused after $n puts"
  info "quota 1500000: $n puts of 200 kB accepted; $(ctl --endpoints="$(curl_ 10)" endpoint status -w json | jq -c '.[0].Status | {dbSize, dbSizeInUse}')"
  step "put small while NOSPACE" ctl --endpoints="$(curl_ 10)" put small 1
  step "alarm list" ctl --endpoints="$(curl_ 10)" alarm list
  step "get big (reads work)" sh -c "etcdctl --endpoints=$(curl_ 10) get big --print-value-only | wc -c"
  step "endpoint status -w json errors" sh -c "etcdctl --endpoints=$(curl_ 10) endpoint status -w json | jq -c '.[].Status.errors'"
  step "endpoint health while NOSPACE" ctl --endpoints="$(curl_ 10)" endpoint health
  step "disarm before freeing space" ctl --endpoints="$(curl_ 10)" alarm disarm
  # whether a small put fits after the disarm depends on how far the refused put's
  # predecessors took the file past the quota (etcd 3.4.23: accepted in 1 of 2 runs)
  info "put small after disarm, over quota: $(ctl --endpoints="$(curl_ 10)" put small 1 2>&1 | tail -1)"
  ctl --endpoints="$(curl_ 10)" alarm disarm >/dev/null 2>&1 # a refusal raised it again
  rev=$(ctl --endpoints="$(curl_ 10)" endpoint status -w json | jq -r '.[0].Status.header.revision')
  step "compact to latest (revision masked: the puts accepted differ)" sh -c "etcdctl --endpoints=$(curl_ 10) compact $rev | sed 's/revision [0-9]*/revision R/'"
  step "defrag" ctl --endpoints="$(curl_ 10)" defrag
  step "alarm disarm" ctl --endpoints="$(curl_ 10)" alarm disarm
  step "alarm list after disarm" ctl --endpoints="$(curl_ 10)" alarm list
  step "put small after disarm" ctl --endpoints="$(curl_ 10)" put small 1
  step "endpoint health after disarm" ctl --endpoints="$(curl_ 10)" endpoint health
  stop 10
  step "restart with the quota: alarm stays off" true
  start 10 new "$(cl 10)" --quota-backend-bytes=1500000
  healthy 10
  step "alarm list after restart" ctl --endpoints="$(curl_ 10)" alarm list
  step "put after restart" ctl --endpoints="$(curl_ 10)" put small 2
  stop 10
  info "elapsed ${SECONDS}s"
fi

if [[ $sections == *dr* ]]; then
  sec=dr
  SECONDS=0
  note "3. disaster recovery"
  for s in 11 12 13; do start "$s" new "$(cl 11 12 13)"; done
  for s in 11 12 13; do healthy "$s"; done
  learn "$(curl_ 11)"
  E=$(eps 11 12 13)
  for k in 1 2 3 4 5; do ctl --endpoints="$E" put "d$k" "v$k" >/dev/null; done
  ctl --endpoints="$E" del d5 >/dev/null
  lease=$(ctl --endpoints="$E" lease grant 600 | awk '{print $2}')
  ctl --endpoints="$E" put dl leased --lease="$lease" >/dev/null
  rev0=$(ctl --endpoints="$E" get d1 -w json | jq -r '.header.revision')
  step "snapshot save from a live member" ctl --endpoints="$(curl_ 12)" snapshot save "$work/snap.db"
  step "snapshot save from two endpoints (refused)" ctl --endpoints="$E" snapshot save "$work/snap2.db"
  if [ "$kind" = etcd ]; then SNAP=(etcdctl); else SNAP=(node "$KVCTL" v3); fi
  step "snapshot status -w table (revision, keys)" sh -c "$(printf '%q ' "${SNAP[@]}") snapshot status $work/snap.db -w json | jq -c '{revision: (.revision - $rev0), totalKey}'"
  # the hash masked: kvctl's file records the time it was made
  step "snapshot status -w table" sh -c "$(printf '%q ' "${SNAP[@]}") snapshot status $work/snap.db -w table | sed -E 's/^\\| [0-9a-f]{8} \\|/| HASH |/'"
  step "snapshot status of a missing file" "${SNAP[@]}" snapshot status "$work/none.db"
  if [ "$kind" != etcd ]; then
    step "etcdctl snapshot status of kvctl's file (revision, keys)" sh -c "etcdctl snapshot status $work/snap.db -w json | jq -c '{revision: (.revision - $rev0), totalKey}'"
  fi
  for s in 11 12 13; do kill9 "$s"; done
  for s in 14 15 16; do
    step "snapshot restore m$s" "${SNAP[@]}" snapshot restore "$work/snap.db" --name "m$s" --data-dir "$work/m$s" \
      --initial-cluster "$(cl 14 15 16)" --initial-cluster-token restored --initial-advertise-peer-urls "$(purl "$s")"
  done
  step "snapshot restore into an existing dir" "${SNAP[@]}" snapshot restore "$work/snap.db" --name m14 --data-dir "$work/m14" \
    --initial-cluster "$(cl 14 15 16)" --initial-cluster-token restored --initial-advertise-peer-urls "$(purl 14)"
  step "snapshot restore, name not in initial cluster" "${SNAP[@]}" snapshot restore "$work/snap.db" --name zz --data-dir "$work/zz" \
    --initial-cluster "$(cl 14 15 16)" --initial-advertise-peer-urls "$(purl 14)"
  for s in 14 15 16; do
    "${SERVER[@]}" --name "m$s" --data-dir "$work/m$s" \
      --listen-client-urls "$(curl_ "$s")" --advertise-client-urls "$(curl_ "$s")" \
      --listen-peer-urls "$(purl "$s")" --initial-advertise-peer-urls "$(purl "$s")" \
      --initial-cluster "$(cl 14 15 16)" --initial-cluster-token restored --enable-v2=true >"$work/m$s.log" 2>&1 &
    pid[$s]=$!
  done
  for s in 14 15 16; do healthy "$s"; done
  learn "$(curl_ 14)"
  E=$(eps 14 15 16)
  step_sorted "member list of the restored cluster" ctl --endpoints="$E" member list
  step "restored data" ctl --endpoints="$E" get d --prefix
  step "restored revision (relative)" sh -c "etcdctl --endpoints=$E get d1 -w json | jq -c '{rev: (.header.revision - $rev0), mod: (.kvs[0].mod_revision - $rev0)}'"
  step "restored lease" sh -c "etcdctl --endpoints=$E lease list | sed 's/[0-9a-f]\\{16\\}/<lease>/'"
  step "put after restore" ctl --endpoints="$E" put d6 v6
  step "restored revision after a put" sh -c "etcdctl --endpoints=$E get d6 -w json | jq -c '{rev: (.header.revision - $rev0)}'"
  step "v2 keys of the restored cluster" sh -c "ETCDCTL_API=2 etcdctl --endpoints=$E ls /"

  note "3b. force-new-cluster on a survivor"
  step "v2 set /v2key" env ETCDCTL_API=2 etcdctl --endpoints="$E" set /v2key v2value
  # the survivor must have applied it (its commit index on disk): else etcd's
  # --force-new-cluster drops it as uncommitted
  t=0
  until [ "$(ETCDCTL_API=2 etcdctl --endpoints="$(curl_ 14)" get /v2key 2>/dev/null)" = v2value ] || [ $t -gt 40 ]; do sleep 0.25; t=$((t + 1)); done
  sleep 0.5
  for s in 14 15 16; do kill9 "$s"; done
  "${SERVER[@]}" --name m14 --data-dir "$work/m14" \
    --listen-client-urls "$(curl_ 14)" --advertise-client-urls "$(curl_ 14)" \
    --listen-peer-urls "$(purl 14)" --initial-advertise-peer-urls "$(purl 14)" \
    --initial-cluster "$(cl 14 15 16)" --initial-cluster-token restored --enable-v2=true --force-new-cluster >"$work/m14.log" 2>&1 &
  pid[14]=$!
  healthy 14
  step "member list after --force-new-cluster" ctl --endpoints="$(curl_ 14)" member list
  step "data after --force-new-cluster" ctl --endpoints="$(curl_ 14)" get d --prefix --keys-only
  step "v2 data after --force-new-cluster" sh -c "ETCDCTL_API=2 etcdctl --endpoints=$(curl_ 14) get /v2key"
  step "put after --force-new-cluster" ctl --endpoints="$(curl_ 14)" put d7 v7
  rm -rf "$work/m15"
  step "member add m15 back" until_ok ctl --endpoints="$(curl_ 14)" member add m15 --peer-urls="$(purl 15)"
  cp "$work/out" "$work/add15.txt"
  start_env 15 "$work/add15.txt"
  healthy 15
  learn "$(curl_ 14)"
  step_sorted "member list after re-adding" ctl --endpoints="$(eps 14 15)" member list
  step "m15 has the data" ctl --endpoints="$(curl_ 15)" get d --prefix --keys-only --consistency=s
  stop 15
  stop 14

  note "3c. v2 backup, then --force-new-cluster from it"
  if [ "$kind" = etcd ]; then
    step "v2 backup (ETCDCTL_API=2 etcdctl backup; kvctl backup)" env ETCDCTL_API=2 etcdctl backup --data-dir "$work/m14" --backup-dir "$work/bk"
  else
    step "v2 backup (ETCDCTL_API=2 etcdctl backup; kvctl backup)" node "$KVCTL" backup --data-dir "$work/m14" --backup-dir "$work/bk"
    # etcdctl's backup on a kvctl data dir (a copy: it renames the .snap it cannot read to .broken)
    cp -a "$work/m14" "$work/m14x"
    step "ETCDCTL_API=2 etcdctl backup of kvctl's dir (its last line)" sh -c "ETCDCTL_API=2 etcdctl backup --data-dir $work/m14x --backup-dir $work/bkx 2>&1 | tail -1 | jq -c '{level, msg}'"
    step "what etcdctl backup left in kvctl's snap dir" sh -c "ls $work/m14x/member/snap | sed 's/^[0-9a-f-]*\\.snap/<n>.snap/'"
  fi
  "${SERVER[@]}" --name m17 --data-dir "$work/bk" \
    --listen-client-urls "$(curl_ 17)" --advertise-client-urls "$(curl_ 17)" \
    --listen-peer-urls "$(purl 17)" --initial-advertise-peer-urls "$(purl 17)" \
    --initial-cluster "$(cl 17)" --enable-v2=true --force-new-cluster >"$work/m17.log" 2>&1 &
  pid[17]=$!
  healthy 17 15
  learn "$(curl_ 17)"
  step "member list from the backup" ctl --endpoints="$(curl_ 17)" member list
  step "v3 data from the backup" ctl --endpoints="$(curl_ 17)" get d --prefix --keys-only
  step "v2 data from the backup" sh -c "ETCDCTL_API=2 etcdctl --endpoints=$(curl_ 17) get /v2key"
  step "put on the backup's cluster" ctl --endpoints="$(curl_ 17)" put d8 v8
  stop 17
  info "elapsed ${SECONDS}s"
fi

if [[ $sections == *restart* ]]; then
  sec=restart
  SECONDS=0
  note "4. whole-cluster restart; wrong token / initial cluster"
  for s in 1 2 3; do rm -rf "$work/m$s"; start "$s" new "$(cl 1 2 3)"; done
  for s in 1 2 3; do healthy "$s"; done
  E=$(eps 1 2 3)
  : >"$ids"
  learn "$(curl_ 1)"
  ctl --endpoints="$E" put r1 before >/dev/null
  for s in 1 2 3; do stop "$s"; done
  for s in 1 2 3; do start "$s" new "$(cl 1 2 3)"; done
  for s in 1 2 3; do healthy "$s"; done
  step "after a whole restart" ctl --endpoints="$E" get r1
  step_sorted "member list after restart" ctl --endpoints="$E" member list
  step "put after restart" ctl --endpoints="$E" put r2 after

  # m3 wiped and started again as new with a wrong token: the others know its id already
  stop 3
  rm -rf "$work/m3"
  "${SERVER[@]}" --name m3 --data-dir "$work/m3" --listen-client-urls "$(curl_ 3)" --advertise-client-urls "$(curl_ 3)" \
    --listen-peer-urls "$(purl 3)" --initial-advertise-peer-urls "$(purl 3)" --initial-cluster "$(cl 1 2 3)" \
    --initial-cluster-token wrong --initial-cluster-state new --enable-v2=true >"$work/m3.log" 2>&1 &
  pid[3]=$!
  step "wiped m3, new state, wrong token" exited 3 10
  step "m3 serves (wrong token)" ctl --endpoints="$(curl_ 3)" get r2 --consistency=s
  kill9 3
  rm -rf "$work/m3"
  # m3 wiped and started as new with the right token: already bootstrapped elsewhere
  start 3 new "$(cl 1 2 3)"
  step "wiped m3, new state, right token" exited 3 10
  step "its key log line" keyline 3
  kill9 3
  rm -rf "$work/m3"
  step "member remove m3" until_ok ctl --endpoints="$(eps 1 2)" member remove "$(idof "$(eps 1 2)" m3)"
  # a new member added, started with existing but an initial cluster without itself
  step "member add m4" until_ok ctl --endpoints="$(eps 1 2)" member add m4 --peer-urls="$(purl 4)"
  learn "$(curl_ 1)"
  start 4 existing "$(cl 1 2)"
  step "m4 existing, initial cluster without m4" exited 4 10
  step "its key log line" keyline 4
  kill9 4
  rm -rf "$work/m4"
  start 4 existing "$(cl 1 2 4 5)"
  step "m4 existing, initial cluster with an unknown member" exited 4 10
  step "its key log line" keyline 4
  kill9 4
  rm -rf "$work/m4"
  start 4 existing "$(cl 1 2 4)" --initial-cluster-token wrong
  step "m4 existing, wrong token" exited 4 10
  kill9 4
  rm -rf "$work/m4"
  step "member remove m4" until_ok ctl --endpoints="$(eps 1 2)" member remove "$(idof "$(eps 1 2)" "$(purl 4)")"
  # an existing member restarted with a different initial cluster: its data dir wins
  stop 2
  start 2 new "$(cl 1 2 5)" --initial-cluster-token other
  healthy 2 10
  step "m2 restarted with another token and initial cluster (data dir wins)" ctl --endpoints="$(curl_ 2)" get r2
  for s in 1 2; do stop "$s"; done
  info "elapsed ${SECONDS}s"
fi
