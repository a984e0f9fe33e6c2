#!/usr/bin/env bash
# Drives ctdb_etcd_lock (Debian ctdb: CTDB's cluster lock held in etcd through python-etcd's
# v2 Lock) as CTDB runs it, a mutex helper that prints 0 (acquired, then held by refreshing
# its TTL), 1 (contention) or 3 (error), and gives the lock up when its parent goes away.
# `testparm` and `ctdb pnn`, which it asks for the NetBIOS name and the node number, are
# stubs on PATH. One line per step: the helper's answer, the lock's keys as a v2 client
# sees them (indexes and the helper's uuids masked).
#
# Usage: ctdb-etcd-lock.sh <client port> [helper]    (a fresh server, --enable-v2=true;
#   helper: default /usr/libexec/ctdb/ctdb_etcd_lock, e.g. extracted with
#   `apt-get download ctdb && dpkg -x ctdb_*.deb dir` without installing ctdb)
set -uo pipefail
port=$1
helper=${2:-/usr/libexec/ctdb/ctdb_etcd_lock}
work=$(mktemp -d /tmp/ctdb-lock-scenario.XXXXXX)
parents=()
cleanup() {
  for p in "${parents[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/bin"
printf '#!/bin/sh\necho CLUSTER1\n' >"$work/bin/testparm"
printf '#!/bin/sh\necho "${CTDB_TEST_PNN:-0}"\n' >"$work/bin/ctdb"
chmod +x "$work/bin/testparm" "$work/bin/ctdb"
export PATH="$work/bin:$PATH"
printf 'host = 127.0.0.1\nport = %s\nlock_ttl = 3\nlock_refresh = 1\n' "$port" >"$work/etcd"
base="http://127.0.0.1:$port"

out() { printf '%s: %s\n' "$1" "$2"; }
# start TAG PNN [config]: the helper under a parent shell of its own (CTDB's role); its
# output goes to $work/TAG.out. Sets $parent.
start() {
  CTDB_TEST_PNN=$2 sh -c "/usr/bin/python3 '$helper' -c '${3:-$work/etcd}' >'$work/$1.out' 2>'$work/$1.err' & echo \$! >'$work/$1.pid'; while :; do sleep 0.1; done" &
  parent=$!
  parents+=("$parent")
}
answer() { # TAG: the helper's first answer once it has one (5 s at most); a holder repeats its 0 each refresh
  for _ in $(seq 1 50); do [ -s "$work/$1.out" ] && break; sleep 0.1; done
  head -c 1 "$work/$1.out" 2>/dev/null
}
running() { kill -0 "$(cat "$work/$1.pid")" 2>/dev/null && echo running || echo exited; }
locks() { # the lock directory: how many keys, with a TTL, their values' pnn suffixes
  curl -sS "$base/v2/keys/_locks/_ctdb/CLUSTER1?recursive=true&sorted=true" | python3 -c '
import json, sys
b = json.load(sys.stdin)
if "errorCode" in b:
    print("error", b["errorCode"], b["message"]); sys.exit()
kids = b["node"].get("nodes", [])
print(len(kids), "keys", ["expires" if "expiration" in k else "stays" for k in kids], [k["value"].rsplit("_", 1)[-1] for k in kids])'
}

echo "## one node"
start a 0
out "node 0 helper" "$(answer a)"
out "lock keys" "$(locks)"
sleep 4 # past the 3 s TTL: held only by the refreshes
out "after 4 s: node 0 helper" "$(running a), answered 0 at least 3 times: $([ "$(tr -cd 0 <"$work/a.out" | wc -c)" -ge 3 ] && echo yes || echo no)"
out "lock keys after 4 s" "$(locks)"

echo "## contention"
start b 1
out "node 1 helper" "$(answer b)"
for _ in $(seq 1 50); do [ "$(running b)" = exited ] && break; sleep 0.1; done
out "node 1 helper after answering" "$(running b)"
out "lock keys" "$(locks)"

# Node 1 left its key behind (python-etcd's non-blocking acquire): gone with its TTL.
for _ in $(seq 1 80); do [ "$(locks | cut -d' ' -f1)" = 1 ] && break; sleep 0.1; done
out "lock keys once node 1's expired" "$(locks)"

echo "## the holder's parent goes away"
kill "${parents[0]}"
for _ in $(seq 1 50); do [ "$(running a)" = exited ] && break; sleep 0.1; done
out "node 0 helper" "$(running a)"
out "lock keys" "$(locks)"
start c 1
out "node 1 helper again" "$(answer c)"

echo "## the holder dies (SIGKILL): the lock expires"
kill -KILL "$(cat "$work/c.pid")" 2>/dev/null
out "lock keys right after" "$(locks)"
# Asked again only once the killed holder's key expired (a helper that finds contention
# leaves a key of its own, which would stand in the way for its TTL).
for _ in $(seq 1 100); do [ "$(locks | cut -d' ' -f1)" = 0 ] && break; sleep 0.1; done
out "lock keys once its TTL passed" "$(locks)"
start d 2
out "node 2 helper" "$(answer d)"
out "lock keys" "$(locks)"

echo "## errors"
printf 'host = 127.0.0.1\nport = 1\n' >"$work/bad-port"
start e 3 "$work/bad-port"
out "server not reachable" "$(answer e)"
printf 'host = 127.0.0.1\nport = %s\nusername = nobody\npassword = x\n' "$port" >"$work/bad-user"
curl -sS -X PUT "$base/v2/auth/users/root" -d '{"user":"root","password":"rootpw"}' -o /dev/null
curl -sS -X PUT "$base/v2/auth/enable" -o /dev/null
curl -sS -u root:rootpw -X PUT "$base/v2/auth/roles/guest" -d '{"role":"guest","revoke":{"kv":{"read":["/*"],"write":["/*"]}}}' -o /dev/null
start f 4 "$work/bad-user"
out "auth on, unknown user" "$(answer f)"
start g 5
out "auth on, no user" "$(answer g)"
curl -sS -u root:rootpw -X DELETE "$base/v2/auth/enable" -o /dev/null
echo "## end"
