#!/usr/bin/env bash
# The discovery service (Debian etcd-discovery: discovery.etcd.io, which keeps its tokens
# in an etcd v2 key space under /_etcd/registry) with a one-member STORE behind it, and a
# three-member CLUSTER bootstrapped through it with --discovery; then the error paths a
# member meets at a token: full (exit, or a v2 proxy), unknown, malformed, a bad size, a
# duplicate id (a wiped member registering again), a duplicate name. One line per step;
# tokens, member ids and ports masked, error texts reduced to etcd's "discovery: ..." error.
#
# Usage: discovery.sh <store: etcd|kvctl> <cluster: etcd|kvctl> <first port>
#   ports: <first port> .. +29; kvctl runs as $KVCTL_CMD (default: node bin/kvctl).
# etcd 3.4.23 for both is the reference (discovery.expected.txt); every other pairing
# must print the same lines.
set -uo pipefail
store=$1
cluster=$2
base=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
read -r -a kvctl <<<"${KVCTL_CMD:-node $root/bin/kvctl}"
work=$(mktemp -d /tmp/discovery-scenario.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  if [ -n "${KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# etcd's v2discovery errors, as its log and kvctl's name them
errs='discovery: (invalid URL|size key is bad|size key not found|token not found|found duplicate id|found duplicate name|cluster is full|too many retries|bad discovery endpoint)'
# why LOG: the error a server stopped on. etcd's log words two of them in its own way.
why() {
  if grep -aq "previously registered with discovery service" "$1"; then echo "discovery: found duplicate id"
  elif grep -aq "duplicated name has registered with discovery" "$1"; then echo "discovery: found duplicate name"
  else grep -aoE "$errs|[0-9]+: Key not found \([^)]*\)" "$1" | head -1 | mask
  fi
}
out() { printf '%s: %s\n' "$1" "$2"; }
server() { # kind name client-port peer-port [flags...]: starts one server in the background
  # (its data dir and log: $work/$TAG, TAG defaulting to the name)
  local kind=$1 name=$2 cp=$3 pp=$4 tag=${TAG:-$2}
  shift 4
  local flags=(--name "$name" --data-dir "$work/$tag" --listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp"
    --listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" --enable-v2=true "$@")
  if [ "$kind" = etcd ]; then etcd "${flags[@]}" >"$work/$tag.log" 2>&1 & else "${kvctl[@]}" serve "${flags[@]}" >"$work/$tag.log" 2>&1 & fi
  pids+=($!)
  last=$!
}
# run kind name cp pp flags...: a server that is expected to stop by itself (10 s at most)
run() {
  server "$@"
  local pid=$last
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    wait "$pid" 2>/dev/null
    echo "still running"
  else
    wait "$pid"
    echo "exit=$? $(why "$work/${TAG:-$2}.log")"
  fi
}
waitfor() { # url: until it answers 200
  for _ in $(seq 1 150); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
mask() { sed -E -e "s|$token|TOKEN|g" -e "s|$bad|BADTOKEN|g" -e "s|$unknown|UNKNOWN|g" -e 's|127\.0\.0\.1:[0-9]+|127.0.0.1:PORT|g'; }
bad=fedcba9876543210fedcba9876543210
unknown=0123456789abcdef0123456789abcdef

# The store and the service.
server "$store" store $((base)) $((base + 1))
waitfor "http://127.0.0.1:$base/v2/keys/" || { echo "store did not start" >&2; cat "$work/store.log" >&2; exit 1; }
disc="http://127.0.0.1:$((base + 2))"
/usr/bin/discovery.etcd.io --addr "127.0.0.1:$((base + 2))" --etcd "http://127.0.0.1:$base" --host "$disc" >"$work/discovery.log" 2>&1 &
pids+=($!)
waitfor "$disc/health" || { echo "discovery service did not start" >&2; cat "$work/discovery.log" >&2; exit 1; }
token=NONE

echo "## service"
out "health" "$(curl -sS "$disc/health")"
url=$(curl -sS -X PUT "$disc/new?size=3")
token=${url##*/}
out "new size=3" "$(printf '%s' "$url" | mask)"
out "new size=abc" "$(curl -sS -w ' %{http_code}' -X PUT "$disc/new?size=abc" | tr '\n' ' ')"
out "token size" "$(curl -sS "$url/_config/size" | python3 -c 'import json,sys; print(json.load(sys.stdin)["node"]["value"])')"
out "token in the store" "$(curl -sS "http://127.0.0.1:$base/v2/keys/_etcd/registry/$token?recursive=true" | python3 -c 'import json,sys; n=json.load(sys.stdin)["node"]; print(n["dir"], [c["key"].rsplit("/",1)[1] for c in n.get("nodes",[])])')"

echo "## cluster of 3 through the token"
for i in 1 2 3; do
  server "$cluster" "m$i" $((base + 2 + 2 * i)) $((base + 3 + 2 * i)) --discovery "$url"
  [ "$i" = 1 ] && m1=$last
  [ "$i" = 2 ] && m2=$last
done
for i in 1 2 3; do waitfor "http://127.0.0.1:$((base + 2 + 2 * i))/v2/keys/" || echo "m$i did not start" >&2; done
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$((base + 4))/health" 2>/dev/null | grep -q '"true"' && break; sleep 0.1; done
out "members (m1's view)" "$(curl -sS "http://127.0.0.1:$((base + 4))/v2/members" | python3 -c 'import json,sys; print(sorted((m["name"], m["peerURLs"]) for m in json.load(sys.stdin)["members"]))' | mask)"
out "put via m1" "$(curl -sS -X PUT "http://127.0.0.1:$((base + 4))/v2/keys/through?value=discovery" -o /dev/null -w '%{http_code}')"
out "quorum get via m3" "$(curl -sS "http://127.0.0.1:$((base + 8))/v2/keys/through?quorum=true" | python3 -c 'import json,sys; print(json.load(sys.stdin)["node"]["value"])')"
out "registrations" "$(curl -sS "$url?recursive=true" | python3 -c 'import json,sys; n=json.load(sys.stdin)["node"]; print(sorted(c["value"] for c in n.get("nodes",[])))' | mask)"
out "registration keys are member ids" "$(curl -sS "$url" | python3 -c '
import json,sys,urllib.request
n=json.load(sys.stdin)["node"]
ids=sorted(c["key"].rsplit("/",1)[1] for c in n.get("nodes",[]) if not c["key"].endswith("_config"))
ms=json.load(urllib.request.urlopen(sys.argv[1]))["members"]
print(ids==sorted(m["id"] for m in ms), len(ids))' "http://127.0.0.1:$((base + 4))/v2/members")"

echo "## a member restarts with its data (the token is full by now: not asked again)"
kill "$m2"
wait "$m2" 2>/dev/null
server "$cluster" m2 $((base + 6)) $((base + 7)) --discovery "$url"
m2=$last
waitfor "http://127.0.0.1:$((base + 6))/v2/keys/" || echo "m2 did not restart" >&2
out "m2 after its restart: a member" "$(curl -sS "http://127.0.0.1:$((base + 6))/v2/members" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["members"]))' 2>&1) members, quorum get: $(curl -sS "http://127.0.0.1:$((base + 6))/v2/keys/through?quorum=true" | python3 -c 'import json,sys; print(json.load(sys.stdin)["node"]["value"])' 2>&1)"

echo "## a fourth member"
out "full token, --discovery-fallback=exit" "$(run "$cluster" m4 $((base + 10)) $((base + 11)) --discovery "$url" --discovery-fallback exit)"
server "$cluster" m5 $((base + 12)) $((base + 13)) --discovery "$url"
waitfor "http://127.0.0.1:$((base + 12))/v2/keys/through" >/dev/null
out "full token, default fallback: a v2 proxy" "$(curl -sS "http://127.0.0.1:$((base + 12))/v2/keys/through" | python3 -c 'import json,sys; print(json.load(sys.stdin)["node"]["value"])' 2>&1)"
out "the proxy's registration" "$(curl -sS "$url?recursive=true" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["node"]["nodes"]))')"

echo "## bad tokens"
out "unknown token" "$(run "$cluster" m6 $((base + 14)) $((base + 15)) --discovery "$disc/$unknown" --discovery-fallback exit)"
out "malformed token" "$(run "$cluster" m7 $((base + 16)) $((base + 17)) --discovery "$disc/nosuchtoken" --discovery-fallback exit)"
curl -sS -X PUT "http://127.0.0.1:$base/v2/keys/_etcd/registry/$bad/_config/size" -d value=three -o /dev/null
out "size not a number" "$(run "$cluster" m8 $((base + 18)) $((base + 19)) --discovery "$disc/$bad" --discovery-fallback exit)"
# m1 again with an empty data dir: its key is there already.
kill "$m1" 2>/dev/null
wait "$m1" 2>/dev/null
rm -rf "$work/m1"
out "a member registering twice (wiped data dir)" "$(run "$cluster" m1 $((base + 4)) $((base + 5)) --discovery "$url" --discovery-fallback exit)"
two=$(curl -sS -X PUT "$disc/new?size=2")
server "$cluster" dup $((base + 20)) $((base + 21)) --discovery "$two" --discovery-fallback exit
first=$last
out "two members of one name, second" "$(TAG=dup2 run "$cluster" dup $((base + 22)) $((base + 23)) --discovery "$two" --discovery-fallback exit)"
for _ in $(seq 1 100); do kill -0 "$first" 2>/dev/null || break; sleep 0.1; done
wait "$first"
out "two members of one name, first" "exit=$? $(why "$work/dup.log")"
echo "## end"
