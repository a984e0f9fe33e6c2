#!/usr/bin/env bash
# Drives etcd's own Go clients (clientv3, concurrency, namespace, leasing, ordering,
# mirror, and the v2 client) against a fresh cluster and prints one normalized line
# per step (scenario.go). Not part of CI: it needs Go and etcd's Go source.
#
# Install (Debian 12; etcd 3.4.23's source and every dependency, GOPATH layout):
#   apt-get install golang-go golang-etcd-server-dev etcd-server
# Run (from the repository root, after `node scripts/bundle.mjs`):
#   test/clients/go/run.sh kvctl 1     # one kvctl member, compared with expected.txt
#   test/clients/go/run.sh kvctl 3     # three members, compared with expected-3.txt
#   test/clients/go/run.sh etcd 1      # the same against etcd 3.4.23 (records the expectation)
# Further arguments go to the scenario (e.g. -only watch); then nothing is compared.
# Environment: PORT_BASE (default 25300; uses PORT_BASE..PORT_BASE+20), KEEP=1 keeps
# the data directories, OUT=<file> where the output goes (default /tmp/go-scenario-<server>-<n>.txt).
# Exit status: 0 when the output matches the expectation file, 1 when it differs.
set -euo pipefail

server=${1:-kvctl}
members=${2:-1}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
base=${PORT_BASE:-25300}
out=${OUT:-/tmp/go-scenario-$server-$members.txt}
work=$(mktemp -d /tmp/go-scenario.XXXXXX)
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "${KEEP:-}" != 1 ]; then rm -rf "$work"; else echo "kept $work" >&2; fi
}
trap cleanup EXIT

# GOPATH mode, offline: the Debian package puts the sources under /usr/share/gocode.
export GO111MODULE=off GOPATH=/tmp/go-scenario-gopath:/usr/share/gocode GOFLAGS= GOCACHE=${GOCACHE:-/tmp/go-scenario-cache}
bin=/tmp/go-scenario
(cd "$here" && go build -o "$bin" scenario.go)

cluster=""
eps=""
for i in $(seq 1 "$members"); do
  cluster+="${cluster:+,}m$i=http://127.0.0.1:$((base + 2 * i))"
  eps+="${eps:+,}http://127.0.0.1:$((base + 2 * i - 1))"
done
for i in $(seq 1 "$members"); do
  flags=(--name "m$i" --data-dir "$work/m$i"
    --listen-client-urls "http://127.0.0.1:$((base + 2 * i - 1))"
    --advertise-client-urls "http://127.0.0.1:$((base + 2 * i - 1))"
    --listen-peer-urls "http://127.0.0.1:$((base + 2 * i))"
    --initial-advertise-peer-urls "http://127.0.0.1:$((base + 2 * i))"
    --initial-cluster "$cluster" --initial-cluster-state new
    --initial-cluster-token go-scenario --enable-v2=true)
  if [ "$server" = etcd ]; then
    etcd "${flags[@]}" >"$work/m$i.log" 2>&1 &
  else
    node "$root/dist/bundle/cli/main.js" serve "${flags[@]}" >"$work/m$i.log" 2>&1 &
  fi
  pids+=($!)
done

# wait until every member answers /health
for i in $(seq 1 "$members"); do
  for _ in $(seq 1 100); do
    if curl -fsS "http://127.0.0.1:$((base + 2 * i - 1))/health" 2>/dev/null | grep -q '"true"'; then break; fi
    sleep 0.2
  done
done

"$bin" -endpoints "$eps" -spare-peer-url "http://127.0.0.1:$((base + 20))" "${@:3}" 2>"$work/client.log" | tee "$out"

# With 3 members and the whole scenario, two probes: a write through member 3 right after
# a revoke through member 1; a watch that requires a leader on member 1 while members 2
# and 3 stop (clientv3.WithRequireLeader, as Kubernetes' API server watches).
if [ "$members" -ge 3 ] && [ -z "${3:-}" ]; then
  # a permission revoked through member 1, then a write through member 3 (30 times)
  "$bin" -endpoints "$eps" -auth-revoke-probe 2>>"$work/client.log" | tee -a "$out"
  "$bin" -endpoints "$eps" -require-leader-probe >"$work/probe" 2>>"$work/client.log" &
  probe=$!
  for _ in $(seq 1 100); do grep -q '^probe.ready' "$work/probe" && break; sleep 0.1; done
  for p in "${pids[@]:1}"; do kill "$p" 2>/dev/null || true; done
  wait "$probe" || true
  tee -a "$out" <"$work/probe"
fi

# Steps where kvctl answers otherwise by design (reported, not failed):
# - watch.fragment, watch.nofragment: kvctl replays history in messages of at most 1 MiB
#   (store/v3/watch-hub.ts REPLAY_BATCH_BYTES) where etcd sends up to 1,000 revisions in
#   one message: the same events, in 2 responses instead of 1;
# - maint.snapshot: kvctl's backup is its own format (README: it reads its own backups,
#   not etcd's bbolt files), ended by its sha256 as etcd's; the bolt magic is absent.
known='^(watch\.fragment|watch\.nofragment|maint\.snapshot) '
expected="$here/expected.txt"
[ "$members" = 1 ] || expected="$here/expected-$members.txt"
if [ "$server" != etcd ] && [ -f "$expected" ] && [ -z "${3:-}" ]; then
  diff -u <(grep -E "$known" "$expected") <(grep -E "$known" "$out") >"$work/known" || {
    echo "known differences (by design, see run.sh):" >&2
    grep '^[-+][a-z]' "$work/known" >&2
  }
  if diff -u <(grep -Ev "$known" "$expected") <(grep -Ev "$known" "$out") >"$work/diff"; then
    echo "same as $(basename "$expected") but for the known differences" >&2
  else
    cat "$work/diff" >&2
    exit 1
  fi
fi
