#!/usr/bin/python3
"""Drives etcd3gw (2.0, OpenStack's client of etcd's v3 JSON gateway: requests over HTTP,
base64 keys) through its API against one endpoint and prints one normalized line per step,
so the output of a run against etcd 3.4.23 and of one against kvctl can be diffed.

Normalized: revisions relative to the revision the scenario starts at (r+N), lease ids as
L1, L2… in order of appearance, cluster and member ids, raft terms, db sizes and versions
printed only as their kind. Each step prints its result or the exception's class and text.

Usage: etcd3gw.py --port P [--host H] [--wait S]
"""
import argparse
import base64
import json
import sys
import threading
import time

import requests

# This file's name is the library's: import the library, not this script.
sys.path = [d for d in sys.path if d not in ("", __import__("os").path.dirname(__import__("os").path.abspath(__file__)))]
import etcd3gw
from etcd3gw import exceptions as exc
from etcd3gw.utils import _encode, _decode

args = None
base = 0
lease_names = {}


def out(name, text):
    print(f"{name}: {text}", flush=True)


def describe_error(e):
    text = " ".join(str(a) for a in e.args) if e.args else ""
    detail = getattr(e, "detail_text", None)
    if detail and not isinstance(e, exc.ConnectionFailedError):
        # the gateway's error body, as the OpenStack callers log it
        text += " " + (norm(json.loads(detail)) if detail.startswith("{") else repr(detail.strip()))
    return f"ERR {type(e).__name__}" + (f": {text}" if text else "")


def step(name, fn):
    try:
        out(name, fn())
    except Exception as e:  # every outcome is a line: compared, not judged, here
        out(name, describe_error(e))


def rel(rev):
    rev = int(rev)
    return f"r+{rev - base}" if rev else "0"


def lease_name(lease_id):
    lease_id = int(lease_id)
    if lease_id == 0:
        return "0"
    if lease_id not in lease_names:
        lease_names[lease_id] = f"L{len(lease_names) + 1}"
    return lease_names[lease_id]


REV_FIELDS = {"revision", "create_revision", "mod_revision", "compact_revision", "start_revision"}
KIND_FIELDS = {"cluster_id", "member_id", "raft_term", "dbSize", "dbSizeInUse", "leader", "raftIndex", "raftTerm",
               "raftAppliedIndex", "watch_id", "version"}


def norm(v, key=None):
    """A gateway answer with what legitimately differs masked; keys in JSON order sorted."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={norm(v[k], k)}" for k in sorted(v)) + "}"
    if isinstance(v, list) and key == "keys":
        # a lease's keys: etcd keeps them in a Go map, so their order is not an answer
        return "[" + ", ".join(sorted(norm(x, key) for x in v)) + "]"
    if isinstance(v, list):
        return "[" + ", ".join(norm(x, key) for x in v) + "]"
    if key in REV_FIELDS:
        return rel(v)
    if key in ("ID", "lease"):
        return lease_name(v)
    if key in KIND_FIELDS and key != "version":
        return type(v).__name__
    if key in ("key", "value", "range_end") and isinstance(v, str):
        try:
            return repr(base64.b64decode(v))
        except Exception:
            return repr(v)
    return repr(v)


def event_line(e):
    kv = e.get("kv", {})
    parts = [e.get("type", "PUT"), repr(kv.get("key")), repr(kv.get("value")), f"mod={rel(kv.get('mod_revision', 0))}",
             f"create={rel(kv.get('create_revision', 0))}", f"ver={kv.get('version')}"]
    if "prev_kv" in e:
        parts.append(f"prev={_decode(e['prev_kv'].get('value', ''))!r}")
    return " ".join(parts)


def raw(c, path, body):
    """A gateway call made with the client's own session, answered as its post() would."""
    return norm(c.post(c.get_url(path), json=body))


def wait_ready(c, seconds):
    deadline = time.time() + seconds
    while True:
        try:
            c.get("ready-probe")
            return
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


def main():
    global args, base
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--wait", type=float, default=0)
    args = p.parse_args()

    print(f"# etcd3gw against {args.host}:{args.port}", flush=True)
    # api paths the OpenStack services configure: tooz's default v3alpha, v3beta, v3
    if args.wait:
        wait_ready(etcd3gw.Etcd3Client(host=args.host, port=args.port, timeout=10, api_path="/v3/"), args.wait)
    for path in ("v3alpha", "v3beta", "v3"):
        c = etcd3gw.client(host=args.host, port=args.port, timeout=10)
        c.api_path = f"/{path}/"
        step(f"api-{path}-status", lambda: sorted(c.status().keys()))
    c = etcd3gw.Etcd3Client(host=args.host, port=args.port, timeout=10, api_path="/v3/")
    st = c.status()
    base = int(st["header"]["revision"])
    step("status", lambda: norm({k: v for k, v in c.status().items() if k != "header"}))
    step("members", lambda: [(m.get("name") is not None, len(m.get("peerURLs", [])), len(m.get("clientURLs", []))) for m in c.members()])

    # kv
    step("put", lambda: c.put("gw/a", "1"))
    step("put-bytes", lambda: c.put(b"gw/b\x00\xff", b"\x00\x01\xfe"))
    step("put-empty", lambda: c.put("gw/c", ""))
    step("put-unicode", lambda: c.put("gw/d", "\u00e9t\u00e9"))
    step("get", lambda: c.get("gw/a"))
    step("get-missing", lambda: c.get("gw/none"))
    step("get-meta", lambda: [(v, norm(m)) for v, m in c.get("gw/a", metadata=True)])
    step("get-empty-value", lambda: [(v, norm(m)) for v, m in c.get("gw/c", metadata=True)])
    step("get-bytes", lambda: c.get(b"gw/b\x00\xff"))
    for order in (None, "ascend", "descend"):
        for target in (None, "key", "version", "create", "mod", "value"):
            step(f"prefix-{order}-{target}", lambda: [m["key"] for v, m in c.get_prefix("gw/", sort_order=order, sort_target=target)])
    step("sort-bad-order", lambda: c.get("gw/a", sort_order="up"))
    step("sort-bad-target", lambda: c.get("gw/a", sort_target="size"))
    step("get-all", lambda: [(m["key"], v) for v, m in c.get_all()])
    step("get-all-descend", lambda: [m["key"] for v, m in c.get_all(sort_order="descend")])
    step("get-limit", lambda: c.get("gw/", range_end=_encode("gw0"), limit=2))
    step("get-keys-only", lambda: [norm(m) for v, m in c.get("gw/a", metadata=True, keys_only=True)])
    step("get-count-only", lambda: c.get("gw/", range_end=_encode("gw0"), count_only=True))
    step("range-count-only", lambda: raw(c, "/kv/range", {"key": _encode("gw/"), "range_end": _encode("gw0"), "count_only": True}))
    step("range-serializable", lambda: raw(c, "/kv/range", {"key": _encode("gw/a"), "serializable": True}))
    step("range-rev", lambda: raw(c, "/kv/range", {"key": _encode("gw/a"), "revision": base + 1}))
    step("range-future-rev", lambda: raw(c, "/kv/range", {"key": _encode("gw/a"), "revision": base + 1000}))
    step("range-min-max", lambda: raw(c, "/kv/range", {"key": _encode("gw/"), "range_end": _encode("gw0"), "min_mod_revision": base + 2, "max_mod_revision": base + 3, "keys_only": True}))
    step("create-new", lambda: c.create("gw/e", "new"))
    step("create-exists", lambda: c.create("gw/e", "again"))
    step("replace-ok", lambda: c.replace("gw/e", "new", "newer"))
    step("replace-stale", lambda: c.replace("gw/e", "new", "newest"))
    step("replace-missing", lambda: c.replace("gw/none", "", "x"))
    step("get-e", lambda: [(v, norm(m)) for v, m in c.get("gw/e", metadata=True)])
    step("put-prev-kv", lambda: raw(c, "/kv/put", {"key": _encode("gw/e"), "value": _encode("p"), "prev_kv": True}))
    step("put-ignore-value", lambda: raw(c, "/kv/put", {"key": _encode("gw/e"), "ignore_value": True}))
    step("put-ignore-value-missing", lambda: raw(c, "/kv/put", {"key": _encode("gw/zz"), "ignore_value": True}))
    step("put-ignore-lease-nolease", lambda: raw(c, "/kv/put", {"key": _encode("gw/e"), "value": _encode("q"), "ignore_lease": True}))
    step("put-no-key", lambda: raw(c, "/kv/put", {"value": _encode("v")}))
    step("put-bad-base64", lambda: raw(c, "/kv/put", {"key": "***", "value": _encode("v")}))
    step("put-bad-json", lambda: norm(c.post(c.get_url("/kv/put"), data="{nope")))
    step("put-unknown-field", lambda: raw(c, "/kv/put", {"key": _encode("gw/u"), "value": _encode("v"), "whatever": 1}))
    step("put-lease-missing", lambda: raw(c, "/kv/put", {"key": _encode("gw/u"), "value": _encode("v"), "lease": 999}))
    step("delete", lambda: c.delete("gw/c"))
    step("delete-missing", lambda: c.delete("gw/c"))
    step("delete-prev-kv", lambda: raw(c, "/kv/deleterange", {"key": _encode("gw/d"), "prev_kv": True}))
    step("delete-raw-missing", lambda: raw(c, "/kv/deleterange", {"key": _encode("gw/none")}))

    # transactions as the OpenStack callers write them
    step("txn-version-0", lambda: raw(c, "/kv/txn", {"compare": [{"key": _encode("gw/g"), "result": "EQUAL", "target": "VERSION", "version": 0}],
                                                     "success": [{"request_put": {"key": _encode("gw/g"), "value": _encode("g")}}], "failure": []}))
    step("txn-version-0-again", lambda: raw(c, "/kv/txn", {"compare": [{"key": _encode("gw/g"), "result": "EQUAL", "target": "VERSION", "version": 0}],
                                                           "success": [{"request_put": {"key": _encode("gw/g"), "value": _encode("g")}}], "failure": []}))
    step("txn-not-equal", lambda: raw(c, "/kv/txn", {"compare": [{"key": _encode("gw/g"), "result": "NOT_EQUAL", "target": "VERSION", "version": 0}],
                                                     "success": [{"request_delete_range": {"key": _encode("gw/g")}}], "failure": []}))
    step("txn-failure-range", lambda: raw(c, "/kv/txn", {"compare": [{"key": _encode("gw/a"), "result": "EQUAL", "target": "VALUE", "value": _encode("x")}],
                                                         "success": [], "failure": [{"request_range": {"key": _encode("gw/a")}}]}))
    step("txn-greater-less", lambda: raw(c, "/kv/txn", {"compare": [{"key": _encode("gw/a"), "result": "GREATER", "target": "MOD", "mod_revision": 1},
                                                                    {"key": _encode("gw/a"), "result": "LESS", "target": "CREATE", "create_revision": base + 100}],
                                                        "success": [{"request_range": {"key": _encode("gw/a")}}, {"request_put": {"key": _encode("gw/h"), "value": _encode("h"), "prev_kv": True}}]}))
    step("txn-enum-numbers", lambda: raw(c, "/kv/txn", {"compare": [{"key": _encode("gw/a"), "result": 0, "target": 3, "value": _encode("1")}],
                                                        "success": [{"request_range": {"key": _encode("gw/a"), "keys_only": True}}]}))
    step("txn-duplicate-key", lambda: raw(c, "/kv/txn", {"success": [{"request_put": {"key": _encode("gw/x"), "value": _encode("1")}},
                                                                     {"request_put": {"key": _encode("gw/x"), "value": _encode("2")}}]}))
    step("txn-bad-result", lambda: raw(c, "/kv/txn", {"compare": [{"key": _encode("gw/a"), "result": "SAME", "target": "VALUE", "value": _encode("1")}]}))
    step("txn-empty", lambda: raw(c, "/kv/txn", {}))
    step("txn-nested", lambda: raw(c, "/kv/txn", {"success": [{"request_txn": {"success": [{"request_put": {"key": _encode("gw/n"), "value": _encode("n")}}]}}]}))
    step("txn-delete-prefix", lambda: raw(c, "/kv/txn", {"success": [{"request_delete_range": {"key": _encode("gw/n"), "range_end": _encode("gw/o"), "prev_kv": True}}]}))

    # leases
    lease = c.lease(ttl=30)
    out("lease-grant", lease_name(lease.id))
    step("lease-grant-raw", lambda: raw(c, "/lease/grant", {"TTL": 20, "ID": 0}))
    step("lease-grant-id", lambda: raw(c, "/lease/grant", {"TTL": 20, "ID": 4242}))
    step("lease-grant-id-again", lambda: raw(c, "/lease/grant", {"TTL": 20, "ID": 4242}))
    step("lease-grant-ttl-string", lambda: raw(c, "/lease/grant", {"TTL": "15", "ID": "4343"}))
    step("lease-ttl", lambda: 25 <= lease.ttl() <= 30)
    step("lease-put", lambda: c.put("gw/l1", "v", lease=lease))
    step("lease-create", lambda: c.create("gw/l2", "v", lease=lease))
    step("lease-keys", lambda: sorted(lease.keys()))
    step("lease-refresh", lambda: lease.refresh())
    step("lease-keepalive-raw", lambda: raw(c, "/lease/keepalive", {"ID": lease.id}))
    step("lease-timetolive-raw", lambda: norm({k: (v if k != "TTL" else int(v) > 25) for k, v in c.post(c.get_url("/kv/lease/timetolive"), json={"ID": lease.id, "keys": True}).items()}))
    step("lease-timetolive-new-path", lambda: sorted(c.post(c.get_url("/lease/timetolive"), json={"ID": lease.id}).keys()))
    step("lease-leases", lambda: sorted(lease_name(l["ID"]) for l in c.post(c.get_url("/lease/leases"), json={}).get("leases", [])))
    step("lease-leases-kv-path", lambda: sorted(lease_name(l["ID"]) for l in c.post(c.get_url("/kv/lease/leases"), json={}).get("leases", [])))
    step("get-lease-meta", lambda: [norm(m) for v, m in c.get("gw/l1", metadata=True)])
    step("lease-revoke", lambda: lease.revoke())
    step("lease-keys-after-revoke", lambda: lease.keys())
    step("lease-ttl-after-revoke", lambda: lease.ttl())
    step("lease-refresh-after-revoke", lambda: lease.refresh())
    step("lease-revoke-again", lambda: lease.revoke())
    step("lease-revoke-new-path", lambda: raw(c, "/lease/revoke", {"ID": 4242}))
    step("get-after-revoke", lambda: c.get_prefix("gw/l"))
    step("lease-grant-zero", lambda: raw(c, "/lease/grant", {"TTL": 0}))
    short = c.lease(ttl=1)
    c.put("gw/short", "s", lease=short)
    deadline = time.time() + 10
    while c.get("gw/short") and time.time() < deadline:
        time.sleep(0.2)
    step("lease-short-expired", lambda: (c.get("gw/short"), short.ttl(), short.refresh()))

    # locks (etcd3gw's own: a txn on create_revision 0 under a lease)
    lk = c.lock("lk1", ttl=30)
    step("lock-acquire", lambda: lk.acquire())
    step("lock-is-acquired", lambda: lk.is_acquired())
    lk2 = c.lock("lk1", ttl=30)
    step("lock-contended", lambda: lk2.acquire())
    step("lock-contended-is-acquired", lambda: lk2.is_acquired())
    step("lock-refresh", lambda: lk.refresh())
    step("lock-release", lambda: lk.release())
    step("lock-release-again", lambda: lk.release())
    step("lock-second-acquire", lambda: lk2.acquire())
    step("lock-second-key", lambda: [norm(m) for v, m in c.get(lk2.key, metadata=True)][0].count("lease=L"))
    with c.lock("lk2", ttl=5) as l3:
        step("lock-context", lambda: l3.is_acquired())
    step("lock-context-released", lambda: l3.is_acquired())
    lk2.release()

    # watches: streamed over one HTTP response in chunks
    events, cancel = c.watch("gw/w")
    time.sleep(0.3)
    c.put("gw/w", "1")
    c.put("gw/w", "2")
    c.delete("gw/w")
    got = []
    for e in events:
        got.append(event_line(e))
        if len(got) == 3:
            break
    cancel()
    out("watch-key", got)
    events, cancel = c.watch_prefix("gw/wp/", prev_kv=True)
    time.sleep(0.3)
    c.put("gw/wp/a", "1")
    c.put("gw/wq", "not-mine")
    c.put("gw/wp/a", "2")
    c.put("gw/wp/b", "3")
    got = []
    for e in events:
        got.append(event_line(e))
        if len(got) == 3:
            break
    cancel()
    out("watch-prefix-prev-kv", got)
    w_rev = base + 2
    step("watch-once-history", lambda: event_line(c.watch_once("gw/a", timeout=5, start_revision=w_rev)))
    step("watch-once-timeout", lambda: c.watch_once("gw/nothing", timeout=1))
    step("watch-prefix-once-history", lambda: event_line(c.watch_prefix_once("gw/wp/", timeout=5, start_revision=base + 1)))
    step("watch-once-filter-noput", lambda: event_line(c.watch_once("gw/a", timeout=5, start_revision=base + 1, filters=["NOPUT"])))

    def later_put():
        time.sleep(0.5)
        c.put("gw/wl", "late")
    threading.Thread(target=later_put).start()
    step("watch-once-live", lambda: event_line(c.watch_once("gw/wl", timeout=5)))

    # the stream's raw chunks: created message, events, how the gateway frames them
    def raw_watch(body, n, after=None):
        r = c.session.post(c.get_url("/watch"), json=body, stream=True, timeout=5)
        msgs = []
        try:
            it = r.iter_lines()
            for line in it:
                if not line:
                    continue
                m = json.loads(line)
                msgs.append(norm(m))
                if after and len(msgs) == 1:
                    after()
                if len(msgs) >= n:
                    break
        except requests.exceptions.ConnectionError as e:
            msgs.append(f"ERR {type(e).__name__}")
        finally:
            r.close()
        return [r.status_code, r.headers.get("Content-Type")] + msgs
    step("watch-raw-created", lambda: raw_watch({"create_request": {"key": _encode("gw/r")}}, 2, after=lambda: c.put("gw/r", "x")))
    step("watch-raw-history", lambda: raw_watch({"create_request": {"key": _encode("gw/a"), "start_revision": base + 1, "prev_kv": True}}, 2))
    step("watch-raw-range", lambda: raw_watch({"create_request": {"key": _encode("gw/"), "range_end": _encode("gw0"), "start_revision": base + 1, "filters": ["NODELETE"]}}, 2))
    step("watch-raw-progress", lambda: raw_watch({"create_request": {"key": _encode("gw/p"), "progress_notify": True}}, 1))
    step("watch-raw-fragment", lambda: raw_watch({"create_request": {"key": _encode("gw/r"), "fragment": True, "start_revision": base + 1}}, 2))

    # compaction, then a watch and a range below it
    now = int(c.status()["header"]["revision"])
    step("compact", lambda: raw(c, "/kv/compaction", {"revision": now - 5, "physical": True}))
    step("compact-again", lambda: raw(c, "/kv/compaction", {"revision": now - 6}))
    step("compact-future", lambda: raw(c, "/kv/compaction", {"revision": now + 100}))
    step("range-compacted", lambda: raw(c, "/kv/range", {"key": _encode("gw/a"), "revision": base + 1}))
    step("watch-raw-compacted", lambda: raw_watch({"create_request": {"key": _encode("gw/a"), "start_revision": base + 1}}, 2))
    step("watch-once-compacted", lambda: c.watch_once("gw/a", timeout=2, start_revision=base + 1))

    # maintenance and cluster calls an operator's script makes over the gateway
    step("alarm-list", lambda: raw(c, "/maintenance/alarm", {"action": "GET"}))
    step("hash", lambda: sorted(c.post(c.get_url("/maintenance/hash"), json={}).keys()))
    step("hashkv", lambda: sorted(c.post(c.get_url("/maintenance/hash"), json={"revision": 0}).keys()))
    step("defragment", lambda: raw(c, "/maintenance/defragment", {}))
    step("unknown-path", lambda: raw(c, "/kv/nothing", {}))
    step("get-method", lambda: (lambda r: (r.status_code, r.text.strip()))(c.session.get(c.get_url("/kv/range"))))

    # a client on a port nothing listens on
    dead = etcd3gw.client(host=args.host, port=1, timeout=2)
    step("dead-endpoint", lambda: type(_catch(lambda: dead.get("x"))).__name__)

    step("delete-prefix", lambda: c.delete_prefix("gw/"))
    step("get-prefix-after", lambda: c.get_prefix("gw/"))
    step("delete-all-locks", lambda: c.delete_prefix("/locks/"))


def _catch(fn):
    try:
        fn()
    except Exception as e:
        return e
    return None


if __name__ == "__main__":
    main()
