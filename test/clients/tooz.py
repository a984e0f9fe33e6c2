#!/usr/bin/python3
"""Drives tooz (3.1, OpenStack's coordination library) against one etcd endpoint with both
of its etcd drivers and prints one normalized line per step, so the output of a run against
etcd 3.4.23 and of one against kvctl can be diffed:

- etcd3+http:// (over etcd3gw, the v3 JSON gateway): groups, members and their
  capabilities, membership leases kept by heartbeats and lost without them, locks
  (blocking, non-blocking, contended, broken, expired), the api_version paths;
- etcd:// (the v2 keys API): locks as TTL keys created with prevExist=false, waited for with
  wait=true&waitIndex, released with prevIndex, refreshed by heartbeats.

Leader election and group watches are not implemented by these drivers: the steps print
tooz's NotImplemented, as a service calling them sees it. Nothing printed depends on ids,
revisions or times.

Usage: tooz.py --port P [--host H] [--wait S]
"""
import argparse
import os
import re
import sys
import threading
import time

# This file's name is the library's: import the library, not this script.
sys.path = [d for d in sys.path if d not in ("", os.path.dirname(os.path.abspath(__file__)))]
import tooz  # noqa: E402
from tooz import coordination  # noqa: E402

args = None


def out(name, text):
    print(f"{name}: {text}", flush=True)


def describe_error(e):
    text = str(e)
    cause = getattr(e, "cause", None)
    line = f"ERR {type(e).__name__}" + (f": {text}" if text else "")
    if cause is not None and str(cause) != text:
        line += f" (cause {type(cause).__name__})"
    return re.sub(r" at 0x[0-9a-f]+", " at 0x…", line)


def step(name, fn):
    try:
        out(name, fn())
    except Exception as e:  # every outcome is a line: compared, not judged, here
        out(name, describe_error(e))


def until(fn, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if fn():
            return True
        time.sleep(0.2)
    return False


def coordinator(url, member):
    c = coordination.get_coordinator(url, member)
    c.start()
    return c


def etcd3_section(host, port):
    base = f"etcd3+http://{host}:{port}"
    # Debian's tooz 3.1 passes api_path to etcd3gw.client(), which etcd3gw 2.0 does not take
    # (later etcd3gw releases do): as packaged, the driver cannot start. Recorded, then
    # bridged the way the later client() does, so that the rest runs as it would there.
    step("e3-start-as-packaged", lambda: coordinator(f"{base}?api_version=v3", b"probe").stop())
    import etcd3gw
    import inspect
    if "api_path" not in inspect.signature(etcd3gw.client).parameters:
        etcd3gw.client = lambda **kw: etcd3gw.Etcd3Client(**kw)
    for version in ("v3alpha", "v3beta", "v3"):
        def start_stop():
            c = coordinator(f"{base}?api_version={version}", b"probe")
            c.stop()
            return "started"
        step(f"e3-start-{version}", start_stop)
    step("e3-start-default-api", lambda: coordinator(base, b"probe").stop())

    url = f"{base}?api_version=v3&timeout=10&membership_timeout=30&lock_timeout=30"
    a = coordinator(url, b"member-a")
    b = coordinator(url, b"member-b")
    step("e3-heartbeat", lambda: a.heartbeat())
    step("e3-groups-none", lambda: sorted(a.get_groups().get()))
    step("e3-create-group", lambda: a.create_group(b"g1").get())
    step("e3-create-group-again", lambda: b.create_group(b"g1").get())
    step("e3-create-group-2", lambda: a.create_group(b"g2").get())
    step("e3-groups", lambda: sorted(a.get_groups().get()))
    step("e3-members-empty", lambda: sorted(a.get_members(b"g1").get()))
    step("e3-members-no-group", lambda: a.get_members(b"nope").get())
    step("e3-join", lambda: a.join_group(b"g1", b"caps-a").get())
    step("e3-join-again", lambda: a.join_group(b"g1").get())
    step("e3-join-no-group", lambda: a.join_group(b"nope").get())
    step("e3-join-b", lambda: b.join_group(b"g1", {"role": "b", "n": 2}).get())
    step("e3-members", lambda: sorted(a.get_members(b"g1").get()))
    step("e3-capabilities-a", lambda: a.get_member_capabilities(b"g1", b"member-a").get())
    step("e3-capabilities-b", lambda: a.get_member_capabilities(b"g1", b"member-b").get())
    step("e3-capabilities-missing", lambda: a.get_member_capabilities(b"g1", b"member-z").get())
    step("e3-update-capabilities", lambda: b.update_capabilities(b"g1", b"caps-b2").get())
    step("e3-capabilities-updated", lambda: a.get_member_capabilities(b"g1", b"member-b").get())
    step("e3-update-capabilities-not-joined", lambda: b.update_capabilities(b"g2", b"x").get())
    step("e3-delete-group-not-empty", lambda: a.delete_group(b"g1").get())
    step("e3-delete-group-missing", lambda: a.delete_group(b"nope").get())
    step("e3-leave", lambda: b.leave_group(b"g1").get())
    step("e3-leave-again", lambda: b.leave_group(b"g1").get())
    step("e3-members-after-leave", lambda: sorted(a.get_members(b"g1").get()))
    step("e3-heartbeat-b", lambda: b.heartbeat())
    step("e3-watch-join", lambda: a.watch_join_group(b"g1", lambda ev: None))
    step("e3-watch-elected", lambda: a.watch_elected_as_leader(b"g1", lambda ev: None))
    step("e3-get-leader", lambda: a.get_leader(b"g1").get())
    step("e3-run-watchers", lambda: a.run_watchers())

    # a member whose lease runs out: gone from the group; its heartbeat takes a new lease
    short = coordinator(f"{base}?api_version=v3&membership_timeout=1", b"member-short")
    step("e3-join-short", lambda: short.join_group(b"g1").get())
    step("e3-members-with-short", lambda: sorted(a.get_members(b"g1").get()))
    step("e3-short-expires", lambda: until(lambda: b"member-short" not in a.get_members(b"g1").get(), 15))
    step("e3-short-heartbeat-after-expiry", lambda: short.heartbeat())
    step("e3-short-join-again", lambda: short.join_group(b"g1").get())
    step("e3-short-kept-alive", lambda: [short.heartbeat() for _ in range(3) if time.sleep(0.6) is None] and sorted(a.get_members(b"g1").get()))
    short.stop()
    step("e3-members-after-stop", lambda: sorted(a.get_members(b"g1").get()))

    # locks
    la = a.get_lock(b"lock1")
    lb = b.get_lock(b"lock1")
    step("e3-lock-acquire", lambda: la.acquire(blocking=False))
    step("e3-lock-acquired", lambda: (la.acquired, lb.acquired))
    step("e3-lock-contended", lambda: lb.acquire(blocking=False))
    # blocking=1 would be True (wait for ever): 2 s
    step("e3-lock-contended-timeout", lambda: lb.acquire(blocking=2))
    step("e3-lock-shared", lambda: lb.acquire(shared=True))
    step("e3-lock-heartbeat", lambda: a.heartbeat())
    step("e3-lock-release", lambda: la.release())
    step("e3-lock-release-again", lambda: la.release())
    step("e3-lock-acquire-b", lambda: lb.acquire(blocking=False))
    step("e3-lock-break", lambda: la.break_())
    step("e3-lock-break-again", lambda: la.break_())
    step("e3-lock-b-release-after-break", lambda: lb.release())

    def release_later():
        time.sleep(1)
        la.release()
    step("e3-lock-acquire-a", lambda: la.acquire(blocking=False))
    threading.Thread(target=release_later).start()
    step("e3-lock-blocking-waits-release", lambda: lb.acquire(blocking=10))
    step("e3-lock-release-b", lambda: lb.release())
    with a.get_lock(b"lock2") as l2:
        step("e3-lock-context", lambda: l2.acquired)
    step("e3-lock-context-released", lambda: l2.acquired)
    # a lock whose holder stops heartbeating expires with its lease
    holder = coordinator(f"{base}?api_version=v3&lock_timeout=1", b"member-holder")
    lh = holder.get_lock(b"lock3")
    step("e3-lock-short", lambda: lh.acquire(blocking=False))
    step("e3-lock-short-expires", lambda: b.get_lock(b"lock3").acquire(blocking=10))
    holder.stop()

    step("e3-delete-group-2", lambda: a.delete_group(b"g2").get())
    step("e3-leave-a", lambda: a.leave_group(b"g1").get())
    step("e3-delete-group", lambda: a.delete_group(b"g1").get())
    step("e3-groups-end", lambda: sorted(a.get_groups().get()))
    a.stop()
    b.stop()
    step("e3-stopped-heartbeat", lambda: a.heartbeat())


def etcd2_section(host, port):
    url = f"etcd://{host}:{port}?timeout=10&lock_timeout=30"
    a = coordinator(url, b"member-a")
    b = coordinator(url, b"member-b")
    step("e2-create-group", lambda: a.create_group(b"g1").get())
    step("e2-get-groups", lambda: a.get_groups().get())
    step("e2-heartbeat-nothing", lambda: a.heartbeat())
    la = a.get_lock("lock1")
    lb = b.get_lock("lock1")
    step("e2-lock-acquire", lambda: la.acquire(blocking=False))
    step("e2-lock-acquired", lambda: (la.acquired, lb.acquired))
    step("e2-lock-contended", lambda: lb.acquire(blocking=False))
    step("e2-lock-contended-timeout", lambda: lb.acquire(blocking=2))
    step("e2-lock-shared", lambda: lb.acquire(shared=True))
    step("e2-lock-heartbeat", lambda: a.heartbeat())
    step("e2-lock-heartbeat-b", lambda: b.heartbeat())
    step("e2-lock-release", lambda: la.release())
    step("e2-lock-release-again", lambda: la.release())
    step("e2-lock-acquire-b", lambda: lb.acquire(blocking=False))
    step("e2-lock-break", lambda: la.break_())
    step("e2-lock-break-again", lambda: la.break_())
    step("e2-lock-b-release-after-break", lambda: lb.release())

    def release_later():
        time.sleep(1)
        la.release()
    step("e2-lock-acquire-a", lambda: la.acquire(blocking=False))
    threading.Thread(target=release_later).start()
    # a new lock object: tooz keeps lb "acquired" after its failed release above
    lc = b.get_lock("lock1")
    step("e2-lock-blocking-waits-release", lambda: lc.acquire(blocking=10))
    step("e2-lock-release-c", lambda: lc.release())
    step("e2-lock-unicode-name", lambda: a.get_lock("lock-ünïcode"))
    with a.get_lock("lock/with spaces & ?#%") as l2:
        step("e2-lock-odd-name", lambda: l2.acquired)
    step("e2-lock-odd-name-released", lambda: l2.acquired)
    # a lock whose holder stops heartbeating expires with its TTL; a waiter gets it
    holder = coordinator(f"etcd://{host}:{port}?lock_timeout=1", b"member-holder")
    lh = holder.get_lock("lock3")
    step("e2-lock-short", lambda: lh.acquire(blocking=False))
    step("e2-lock-short-expires", lambda: b.get_lock("lock3").acquire(blocking=10))
    step("e2-lock-short-heartbeat-after-expiry", lambda: holder.heartbeat())
    holder.stop()
    a.stop()
    b.stop()
    step("e2-dead-endpoint", lambda: coordinator("etcd://127.0.0.1:1", b"x"))


def main():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--wait", type=float, default=0)
    args = p.parse_args()
    print(f"# tooz {tooz.__name__} against {args.host}:{args.port}", flush=True)
    if args.wait:
        import requests
        until(lambda: requests.get(f"http://{args.host}:{args.port}/v2/keys/", timeout=2).ok, args.wait)
    etcd3_section(args.host, args.port)
    etcd2_section(args.host, args.port)


if __name__ == "__main__":
    main()
