#!/usr/bin/python3
"""Drives patroni's (3.0.2) etcd DCS classes the way its HA loop does, without PostgreSQL,
against one etcd endpoint (or a cluster), and prints one normalized line per step, so the
output of a run against etcd 3.4.23 and of one against kvctl can be diffed.

--dcs etcd3: patroni.dcs.etcd3.Etcd3 (its own client of the v3 JSON gateway: /version
probing, txns on create/mod revisions, leases, a watch stream feeding its key cache, auth);
--dcs etcd: patroni.dcs.etcd.Etcd (v2 keys API over python-etcd: TTL keys, prevExist,
prevIndex/prevValue, long-poll watches of the leader key).

Three nodes (DCS objects with patroni's config, one per member name) play the HA loop:
initialize, touch_member, attempt_to_acquire_leader, update_leader, get_cluster, watch,
delete_leader, a leader lost to its TTL, cancel_initialization, failover and config keys
with their indexes, sync state, history, status and failsafe keys, delete_cluster. Indexes
(revisions, modifiedIndex) are printed relative to the first index the scenario saw,
leases as L1, L2…, times as bounds.

--failover (with --hosts of every member): at the end the scenario prints
"# KILL <host:port>" (the member its node talks to), waits for a line on stdin (the member
has been killed), then checks the node moves on to another member.

--auth (etcd3, one member): at the end, auth is turned on through the gateway and patroni
runs as a user with readwrite on its namespace; then auth is turned off and on again, which
drops etcd's tokens, and patroni must authenticate again.

Usage: patroni-dcs.py --dcs etcd3|etcd --hosts H:P[,H:P...] [--wait S] [--failover] [--auth]
"""
import argparse
import base64
import datetime
import json
import logging
import sys
import threading
import time

import urllib3

from patroni.dcs import get_dcs
from patroni.dcs.etcd3 import Etcd3, Etcd3Client, prefix_range_end

args = None
base = None
leases = {}


def out(name, text):
    print(f"{name}: {text}", flush=True)


def describe_error(e):
    text = str(e)
    return f"ERR {type(e).__name__}" + (f": {text}" if text else "")


def step(name, fn):
    try:
        out(name, fn())
    except Exception as e:  # every outcome is a line: compared, not judged, here
        out(name, describe_error(e))


def rel(index):
    if index is None:
        return None
    index = int(index)
    return f"i+{index - base}"


def lease(session):
    """etcd3: a lease id (masked in order of appearance); etcd v2: the key's TTL left, which
    depends on when it is read: only whether there is one."""
    if session is None:
        return None
    if args.dcs == "etcd":
        return "ttl" if int(session) > 0 else session
    session = str(session)
    if session not in leases:
        leases[session] = f"L{len(leases) + 1}"
    return leases[session]


def show(c):
    """A Cluster as the HA loop reads it."""
    if c is None:
        return None
    parts = [f"init={c.initialize!r}"]
    parts.append(f"config={(c.config.data, rel(c.config.index)) if c.config else None}")
    parts.append(f"leader={(c.leader.name, rel(c.leader.index), lease(c.leader.session)) if c.leader else None}")
    parts.append(f"last_lsn={c.last_lsn}")
    parts.append("members=" + str(sorted((m.name, rel(m.index), lease(m.session), m.data.get("state"), m.data.get("role")) for m in c.members)))
    f = c.failover
    parts.append(f"failover={(f.leader, f.candidate, str(f.scheduled_at) if f.scheduled_at else None, rel(f.index)) if f else None}")
    s = c.sync
    parts.append(f"sync={(s.leader, s.sync_standby, rel(s.index)) if s and s.index else None}")
    h = c.history
    parts.append(f"history={(h.lines, rel(h.index)) if h else None}")
    parts.append(f"slots={c.slots}")
    parts.append(f"failsafe={c.failsafe}")
    return " ".join(parts)


def node(name, ttl=120, **extra):
    """A DCS object built from the config dict patroni builds from its YAML (get_dcs). TTL
    120 s: longer than the scenario, so that member keys, which a real node touches every
    loop, do not expire however slowly the machine runs it (n3 has 5 s: its loss is a step)."""
    section = {"hosts": args.hosts, "protocol": "http"}
    section.update(extra)
    config = {"scope": "pt", "name": name, "namespace": "/service/", "ttl": ttl, "loop_wait": 1 if ttl < 10 else 10,
              "retry_timeout": 2 if ttl < 10 else 10, args.dcs: section}
    return get_dcs(config)


def member_data(name, role, state="running"):
    port = {"n1": 5432, "n2": 5433, "n3": 5434}[name]
    return {"conn_url": f"postgres://127.0.0.1:{port}/postgres", "api_url": f"http://127.0.0.1:{port + 3576}/patroni",
            "state": state, "role": role, "version": "3.0.2", "xlog_location": 100}


def until(fn, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if fn():
            return True
        time.sleep(0.2)
    return False


def timed_watch(d, index, timeout, action):
    """d.watch(index, timeout) while another node's `action` runs: (woken, within the timeout)."""
    res = {}

    def run():
        t0 = time.time()
        res["woken"] = d.watch(index, timeout)
        res["fast"] = time.time() - t0 < timeout - 0.5
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.5)
    acted = action()
    t.join(timeout + 5)
    return (acted, res.get("woken"), res.get("fast"))


def settled(d):
    """Before a read that is printed. etcd3: waits until the node's key cache (fed by its watch stream) holds what a range
    of the cluster prefix returns, so that what get_cluster shows does not depend on when
    the stream's last event arrived; "UNSETTLED" if it never does (5 s)."""
    if args.dcs == "etcd":
        # v2: patroni reads without quorum, from whichever member its client picked, which
        # may not have applied another node's last write yet (on etcd as on kvctl): wait
        # until that member's index reaches the leader's.
        # Through patroni's retry, as its own reads: a member killed under the node's
        # client is left for another only by a retried call.
        target = int(d.retry(d._client.read, "/", quorum=True).etcd_index)
        if not until(lambda: int(d.retry(d._client.read, "/").etcd_index) >= target, 5):
            raise RuntimeError("UNSETTLED")
        return d
    cache = d._client._kv_cache

    def same():
        # linearizable: patroni's own range is serializable, as stale as the cache may be
        prefix = d.cluster_prefix.encode()
        fields = {"key": base64.b64encode(prefix).decode(), "range_end": base64.b64encode(prefix_range_end(prefix)).decode()}
        direct = d.retry(_linearizable_range, d._client, fields).get("kvs", [])
        want = sorted((n["key"], int(n["mod_revision"])) for n in direct)
        have = sorted((n["key"], int(n["mod_revision"])) for n in cache.copy())
        return want == have
    if not until(same, 5):
        raise RuntimeError("UNSETTLED")
    return d


@Etcd3Client._handle_auth_errors
def _linearizable_range(client, fields, retry=None):
    """A range as patroni's own (a stale token makes it authenticate again), linearizable."""
    return client.call_rpc("/kv/range", dict(fields), retry)


def ha(d, fn):
    """One HA loop turn of node d: it reads the cluster first, then acts on what it read."""
    settled(d).get_cluster()
    return fn()


def current_index(d):
    """The store's index now: the revision (v3) or X-Etcd-Index (v2)."""
    if args.dcs == "etcd3":
        return int(d.retry(d._client.call_rpc, "/kv/range", {"key": "AA==", "serializable": False})["header"]["revision"])
    return int(d.retry(d._client.read, "/", recursive=False).etcd_index)


def main():
    global args, base
    p = argparse.ArgumentParser()
    p.add_argument("--dcs", choices=("etcd", "etcd3"), required=True)
    p.add_argument("--hosts", required=True)
    p.add_argument("--wait", type=float, default=0)
    p.add_argument("--failover", action="store_true")
    p.add_argument("--auth", action="store_true", help="etcd3: patroni with a user and password, auth on")
    args = p.parse_args()
    args.hosts = args.hosts.split(",")
    logging.basicConfig(level=logging.CRITICAL)
    print(f"# patroni {args.dcs} against {','.join(args.hosts)}", flush=True)
    if args.wait:
        http = urllib3.PoolManager()
        until(lambda: _ok(http, f"http://{args.hosts[0]}/version"), args.wait)

    n1 = node("n1")
    n2 = node("n2")
    base = current_index(n1)
    out("dcs-class", type(n1).__name__)
    if isinstance(n1, Etcd3):
        out("version-prefix", n1._client.version_prefix)
        out("cluster-version", n1._client._cluster_version >= (3, 4))
    step("machines", lambda: len(n1._client.machines))
    step("empty-cluster", lambda: show(n1.get_cluster()))
    step("initialize", lambda: ha(n1, lambda: n1.initialize(create_new=True, sysid="7000000000000000001")))
    step("initialize-again", lambda: ha(n2, lambda: n2.initialize(create_new=True, sysid="7000000000000000002")))
    step("initialize-overwrite", lambda: ha(n1, lambda: n1.initialize(create_new=False, sysid="7000000000000000001")))
    cfg = json.dumps({"ttl": 30, "loop_wait": 10, "retry_timeout": 10, "maximum_lag_on_failover": 1048576, "postgresql": {"use_pg_rewind": True}}, separators=(",", ":"))
    step("set-config", lambda: ha(n1, lambda: n1.set_config_value(cfg)))
    step("touch-member-n1", lambda: ha(n1, lambda: n1.touch_member(member_data("n1", "primary"))))
    step("touch-member-n2", lambda: ha(n2, lambda: n2.touch_member(member_data("n2", "replica", "starting"))))
    step("touch-member-n2-same", lambda: ha(n2, lambda: n2.touch_member(member_data("n2", "replica", "starting"))))
    step("touch-member-n2-changed", lambda: ha(n2, lambda: n2.touch_member(member_data("n2", "replica"))))
    step("acquire-n1", lambda: ha(n1, lambda: n1.attempt_to_acquire_leader()))
    step("acquire-n2", lambda: ha(n2, lambda: n2.attempt_to_acquire_leader()))
    step("cluster-n2", lambda: show(settled(n2).get_cluster()))
    step("update-leader-n1", lambda: ha(n1, lambda: n1.update_leader(last_lsn=100, slots={"n2": 100})))
    c = settled(n2).get_cluster()
    step("set-config-stale", lambda: ha(n2, lambda: n2.set_config_value(cfg.replace("1048576", "1"), index=int(c.config.index) - 1)))
    step("set-config-index", lambda: ha(n2, lambda: n2.set_config_value(cfg.replace("1048576", "2"), index=c.config.index)))
    step("cluster-n1", lambda: show(settled(n1).get_cluster()))

    # sync state, history, failover: each written with the index the loop read
    step("write-sync", lambda: ha(n1, lambda: n1.write_sync_state("n1", "n2", index=None)))
    c = settled(n1).get_cluster()
    step("write-sync-stale", lambda: ha(n1, lambda: n1.write_sync_state("n1", "n3", index=int(c.sync.index) - 1)))
    step("write-sync-index", lambda: ha(n1, lambda: n1.write_sync_state("n1", None, index=c.sync.index)))
    step("history", lambda: ha(n1, lambda: n1.set_history_value(json.dumps([[1, 25165984, "no recovery target specified", "2023-01-01T00:00:00+00:00", "n1"]]))))
    step("manual-failover", lambda: ha(n2, lambda: n2.manual_failover("n1", "n2")))
    c = settled(n2).get_cluster()
    step("manual-failover-stale", lambda: ha(n2, lambda: n2.manual_failover("n1", "n3", index=int(c.failover.index) - 1)))
    step("manual-failover-scheduled", lambda: ha(n2, lambda: n2.manual_failover("n1", "n2", scheduled_at=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc), index=c.failover.index)))
    step("cluster-sync-history-failover", lambda: show(settled(n1).get_cluster()))
    step("failover-clear", lambda: ha(n1, lambda: n1.manual_failover("", "", index=n1.cluster.failover.index)))
    step("write-leader-optime", lambda: ha(n1, lambda: n1.write_leader_optime(200)))
    step("write-status", lambda: ha(n1, lambda: n1.write_status({"optime": 300, "slots": {"n2": 300}})))
    step("write-failsafe", lambda: ha(n1, lambda: n1.write_failsafe({"n1": "http://127.0.0.1:9008/patroni", "n2": "http://127.0.0.1:9009/patroni"})))
    step("cluster-status", lambda: show(settled(n2).get_cluster()))
    step("delete-sync", lambda: ha(n1, lambda: n1.delete_sync_state(index=n1.cluster.sync.index)))

    # the leader steps down: a replica watching the leader key is woken and takes it
    c = settled(n2).get_cluster()
    step("watch-quiet", lambda: n2.watch(c.leader.index, 1.5))
    step("watch-delete-leader", lambda: timed_watch(n2, c.leader.index, 8, lambda: ha(n1, lambda: n1.delete_leader(last_lsn=400))))
    step("cluster-no-leader", lambda: show(settled(n2).get_cluster()))
    step("acquire-n2-after", lambda: ha(n2, lambda: n2.attempt_to_acquire_leader()))
    step("acquire-n1-lost", lambda: ha(n1, lambda: n1.attempt_to_acquire_leader()))
    step("delete-leader-n1-not-owner", lambda: ha(n1, lambda: n1.delete_leader()))
    step("update-leader-n2", lambda: ha(n2, lambda: n2.update_leader(last_lsn=500)))
    c = settled(n1).get_cluster()
    step("watch-update-leader", lambda: timed_watch(n1, c.leader.index, 8, lambda: ha(n2, lambda: n2.update_leader(last_lsn=600))))
    step("watch-take-leader", lambda: timed_watch(n2, c.leader.index, 8, lambda: ha(n1, lambda: n1.take_leader())))
    step("cluster-taken", lambda: show(settled(n2).get_cluster()))
    step("update-leader-n2-lost", lambda: ha(n2, lambda: n2.update_leader(last_lsn=650)))
    step("cluster-retaken", lambda: show(settled(n1).get_cluster()))
    step("delete-leader-n2", lambda: ha(n2, lambda: n2.delete_leader()))

    # a leader lost to its TTL: n3 (ttl 5) takes the key and stops refreshing it
    n3 = node("n3", ttl=5)
    step("touch-member-n3", lambda: ha(n3, lambda: n3.touch_member(member_data("n3", "replica"))))
    step("acquire-n3", lambda: ha(n3, lambda: n3.attempt_to_acquire_leader()))
    step("cluster-n3-leader", lambda: show(settled(n1).get_cluster()))
    step("n3-leader-expires", lambda: until(lambda: settled(n1).get_cluster().leader is None, 20))
    step("n3-member-expires", lambda: until(lambda: "n3" not in [m.name for m in settled(n1).get_cluster().members], 10))
    step("acquire-n1-after-expiry", lambda: ha(n1, lambda: n1.attempt_to_acquire_leader()))
    step("n3-acquire-after-expiry", lambda: ha(n3, lambda: n3.attempt_to_acquire_leader()))
    step("cluster-after-expiry", lambda: show(settled(n2).get_cluster()))
    if isinstance(n1, Etcd3):
        step("ttl-change", lambda: (n1.set_ttl(90), ha(n1, lambda: n1.update_leader(last_lsn=800))))
    step("update-leader-n1", lambda: ha(n1, lambda: n1.update_leader(last_lsn=850)))

    step("cancel-initialization", lambda: ha(n1, lambda: n1.cancel_initialization()))
    step("cluster-uninitialized", lambda: show(settled(n2).get_cluster()))
    step("initialize-after-cancel", lambda: ha(n2, lambda: n2.initialize(create_new=True, sysid="7000000000000000003")))

    if args.failover:
        failover(n1, n2)

    step("delete-cluster", lambda: ha(n1, lambda: n1.delete_cluster()))
    step("cluster-deleted", lambda: show(settled(n2).get_cluster()))

    if args.auth:
        auth_section()


def gateway(path, body, token=None):
    """A call on the v3 gateway (the operator setting up auth), answered as its status and
    JSON body (ids and revisions in a header dropped)."""
    http = urllib3.PoolManager()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = token
    r = http.request("POST", f"http://{args.hosts[0]}/v3{path}", body=json.dumps(body), headers=headers, timeout=10, retries=False)
    data = json.loads(r.data.decode() or "{}")
    data.pop("header", None)
    return r.status, data


def b64(v):
    import base64
    return base64.b64encode(v.encode()).decode()


def guarded(fn):
    """A step that may end the process: patroni exits when its password is refused."""
    def run():
        try:
            return fn()
        except SystemExit as e:
            return f"SystemExit {e.code}"
    return run


def auth_section():
    """etcd3 with auth on: patroni's user with readwrite on its namespace only."""
    for path, body in (("/auth/user/add", {"name": "root", "password": "rootpw"}),
                       ("/auth/user/grant", {"user": "root", "role": "root"}),
                       ("/auth/role/add", {"name": "patroni"}),
                       ("/auth/role/grant", {"name": "patroni", "perm": {"permType": "READWRITE", "key": b64("/service/"), "range_end": b64("/service0")}}),
                       ("/auth/user/add", {"name": "patroni", "password": "pw"}),
                       ("/auth/user/grant", {"user": "patroni", "role": "patroni"}),
                       ("/auth/enable", {})):
        step(f"auth-setup{path}", lambda: gateway(path, body)[0])
    a1 = node("n1", username="patroni", password="pw")
    a2 = node("n2", username="patroni", password="pw")
    step("auth-token", lambda: a1._client._token is not None)
    step("auth-cluster-empty", lambda: show(settled(a1).get_cluster()))
    step("auth-initialize", lambda: ha(a1, lambda: a1.initialize(create_new=True, sysid="7000000000000000009")))
    step("auth-touch-member", lambda: ha(a1, lambda: a1.touch_member(member_data("n1", "primary"))))
    step("auth-touch-member-n2", lambda: ha(a2, lambda: a2.touch_member(member_data("n2", "replica"))))
    step("auth-acquire", lambda: ha(a1, lambda: a1.attempt_to_acquire_leader()))
    step("auth-cluster", lambda: show(settled(a2).get_cluster()))
    c = settled(a2).get_cluster()
    step("auth-watch-delete-leader", lambda: timed_watch(a2, c.leader.index, 8, lambda: ha(a1, lambda: a1.delete_leader(last_lsn=10))))
    step("auth-outside-namespace", lambda: a1._client.put("/elsewhere", "x"))
    step("auth-outside-namespace-read", lambda: a1._client.range("/elsewhere"))
    step("auth-no-credentials", guarded(lambda: (lambda d: ha(d, lambda: d.touch_member(member_data("n3", "replica"))))(node("n3"))))
    step("auth-bad-password", guarded(lambda: node("n3", username="patroni", password="wrong")))
    # auth off and on again: etcd drops its simple tokens, patroni's next call must
    # authenticate again (InvalidAuthToken) and carry on
    before = a1._client._token
    status, tok = gateway("/auth/authenticate", {"name": "root", "password": "rootpw"})
    step("auth-disable", lambda: gateway("/auth/disable", {}, tok.get("token"))[0])
    step("auth-enable-again", lambda: gateway("/auth/enable", {})[0])
    step("auth-after-reenable-touch", lambda: ha(a1, lambda: a1.touch_member(member_data("n1", "replica"))))
    step("auth-token-renewed", lambda: a1._client._token not in (None, before))
    step("auth-after-reenable-acquire", lambda: ha(a2, lambda: a2.attempt_to_acquire_leader()))
    step("auth-after-reenable-cluster", lambda: show(settled(a1).get_cluster()))
    status, tok = gateway("/auth/authenticate", {"name": "root", "password": "rootpw"})
    step("auth-disable-end", lambda: gateway("/auth/disable", {}, tok.get("token"))[0])
    # auth off: patroni still sends its token; etcd looks it up (gone with auth) and refuses
    # it, patroni authenticates again, learns auth is off and goes on without one
    step("auth-off-stale-token-refused", lambda: gateway("/kv/range", {"key": b64("/service/pt/none")}, a1._client._token))
    step("auth-off-touch", lambda: ha(a1, lambda: a1.touch_member(member_data("n1", "primary"))))
    step("auth-off-token-dropped", lambda: a1._client._token)
    step("auth-off-delete-cluster", lambda: ha(a1, lambda: a1.delete_cluster()))


def failover(n1, n2):
    """The member n1 talks to is killed (by the caller): n1 must carry on through another."""
    talking = n1._client._base_uri.split("://", 1)[1]
    print(f"# KILL {talking}", flush=True)
    sys.stdin.readline()
    step("after-kill-touch-member", lambda: until(lambda: _quiet(lambda: n1.touch_member(member_data("n1", "primary"))), 30))
    step("after-kill-moved", lambda: n1._client._base_uri.split("://", 1)[1] != talking)
    step("after-kill-update-leader", lambda: ha(n1, lambda: n1.update_leader(last_lsn=900)))
    step("after-kill-cluster", lambda: show(settled(n1).get_cluster()))
    step("after-kill-n2-watch", lambda: timed_watch(n2, settled(n2).get_cluster().leader.index, 8, lambda: ha(n1, lambda: n1.delete_leader(last_lsn=1000))))
    step("after-kill-n2-acquire", lambda: ha(n2, lambda: n2.attempt_to_acquire_leader()))


def _quiet(fn):
    try:
        return fn()
    except Exception:
        return False


def _ok(http, url):
    try:
        return http.request("GET", url, timeout=2, retries=False).status == 200
    except Exception:
        return False


if __name__ == "__main__":
    main()
