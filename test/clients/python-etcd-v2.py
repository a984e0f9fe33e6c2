#!/usr/bin/python3
"""Drives python-etcd (0.4.5, Debian's python3-etcd) through its whole v2 API against one
server and prints one normalised line per step, so that the output for etcd 3.4.23 and
the output for kvctl can be diffed.

Usage: /usr/bin/python3 python-etcd-v2.py --port P [--host H] [--proxy-port Q]
           [--members h:p,h:p,...] [--stop-cmd CMD]

--proxy-port  a free port for the reconnect step's forwarder (default: --port + 50): the
              client starts on the forwarder, which then goes away, and must move on.
--members     every member's client endpoint (the server's first); with --stop-cmd, the
              last step stops the first member (CMD runs in a shell) and the client must
              carry on through another one.

Normalisation: indexes are printed relative to the createdIndex of the first write (B+n),
times as <time>, ports as :PORT, member and cluster ids as <id>; X-Raft-Index is not
printed (etcd's is its committed index, which legitimately differs).
"""
import argparse
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

# python-etcd sends role permissions as lists made from sets, in hash order: one seed, one order.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, PYTHONHASHSEED="0"))

import etcd  # noqa: E402
import etcd.auth  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--proxy-port", type=int)
ap.add_argument("--members", default="")
ap.add_argument("--stop-cmd")
args = ap.parse_args()
HOST, PORT = args.host, args.port
PROXY_PORT = args.proxy_port or PORT + 50
MEMBERS = [(h, int(p)) for h, p in (m.rsplit(":", 1) for m in args.members.split(",") if m)] or [(HOST, PORT)]

BASE = None  # createdIndex of the first write: indexes are printed relative to it


def rel(n):
    if n is None or BASE is None:
        return str(n)
    n = int(n)
    if n == 0:
        return "0"  # errors found before the store carry index 0
    d = n - BASE
    return "B" if d == 0 else ("B+%d" % d if d > 0 else "B%d" % d)


def norm_text(s):
    s = str(s)
    s = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", "<time>", s)
    s = re.sub(r"(127\.0\.0\.1|localhost):\d+", r"\1:PORT", s)
    s = re.sub(r"port=\d+", "port=PORT", s)
    s = re.sub(r"\b(?=[0-9a-f]*[a-f])[0-9a-f]{8,16}\b", "<id>", s)
    s = re.sub(r"object at 0x[0-9a-f]+", "object", s)
    # Index pairs in etcd's 401 cause, "[first/requested]", and in prevIndex's compare
    # failure, "[given != current]" (the values compared here are not numbers; 1 is a given prevIndex).
    s = re.sub(r"\[(\d+) != (\d+)\]", lambda m: "[%s != %s]" % tuple(rel(x) if int(x) > 1 else x for x in m.groups()), s)
    s = re.sub(r"\[(\d+)/(\d+)\]", lambda m: "[%s/%s]" % (rel(m.group(1)), rel(m.group(2))), s)
    return s


def node_str(r):
    """One EtcdResult (or a prevNode) as key=value pairs, in a fixed order."""
    parts = ["key=%s" % r.key]
    if r.dir:
        parts.append("dir")
    else:
        parts.append("value=%r" % r.value)
    if r.ttl is not None:
        parts.append("ttl=%s" % ttl_str(r.ttl))
    if r.expiration is not None:
        parts.append("exp=%s" % norm_text(r.expiration))
    parts.append("c=%s m=%s" % (rel(r.createdIndex), rel(r.modifiedIndex)))
    return " ".join(parts)


TTL_EXPECTED = {}


def ttl_str(t):
    # A ttl read back a moment after a write may be a second lower: print the bucket.
    for want in (100, 60, 50, 30, 5, 3, 2):
        if want - 1 <= t <= want:
            return "~%d" % want
    return str(t)


def result_str(r):
    out = ["action=%s" % r.action, node_str(r)]
    if r.newKey:
        out.append("newKey")
    prev = getattr(r, "_prev_node", None)
    if prev is not None:
        out.append("prev(%s)" % node_str(prev))
    if r._children:
        kids = r._children if SORTED else sorted(r._children, key=lambda c: c["key"])
        out.append("children=[%s]" % ", ".join(child_str(c) for c in kids))
    idx = getattr(r, "etcd_index", None)
    if idx is not None:
        out.append("X-Etcd-Index=%s" % rel(idx))
    return " ".join(out)


def child_str(c):
    s = c["key"]
    if c.get("dir"):
        kids = c.get("nodes", []) if SORTED else sorted(c.get("nodes", []), key=lambda x: x["key"])
        s += "/" + ("{%s}" % ", ".join(child_str(x) for x in kids) if kids else "")
    else:
        s += "=%r" % c.get("value")
    if "ttl" in c:
        s += " ttl=%s" % ttl_str(c["ttl"])
    return s


def exc_str(e):
    s = "%s: %s" % (type(e).__name__, norm_text(e))
    payload = getattr(e, "payload", None)
    if isinstance(payload, dict):
        fields = []
        for k in ("errorCode", "status", "index"):
            if k in payload:
                fields.append("%s=%s" % (k, rel(payload[k]) if k == "index" else payload[k]))
        if fields:
            s += " {" + " ".join(fields) + "}"
    return s


# Without sorted=true etcd lists a directory in Go's map order (random): such listings are
# printed sorted; a step that asks for sorted=true sets SORTED to print the server's order.
SORTED = False


def emit(name, text):
    print("%s | %s" % (name, text), flush=True)


def step(name, fn, sorted=False):
    """Runs fn; prints its result (an EtcdResult, or any value) or the exception it raised."""
    global SORTED
    SORTED = sorted
    try:
        r = fn()
    except Exception as e:  # the exception is the result being compared
        emit(name, "EXC " + exc_str(e))
        return None
    finally:
        SORTED = False
    if isinstance(r, etcd.EtcdResult):
        emit(name, result_str(r))
    else:
        emit(name, norm_text(r))
    return r


def client(**kw):
    return etcd.Client(host=HOST, port=PORT, **kw)


def wait_ready():
    """Waits until the server answers v2 reads and its cluster version is decided (etcd
    writes /0/version into the v2 store once it is: it moves the index)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            c = client(read_timeout=2)
            c.read("/")
            if c.cluster_version not in (None, "not_decided"):
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise SystemExit("server at %s:%d not ready" % (HOST, PORT))


wait_ready()
c = client()

# --- write / read / delete -------------------------------------------------------------
first = c.write("/py/base", "0")
BASE = first.createdIndex
emit("base", result_str(first))
step("write new", lambda: c.write("/py/k", "v1"))
step("write again", lambda: c.write("/py/k", "v2"))
step("read", lambda: c.read("/py/k"))
step("get", lambda: c.get("/py/k"))
step("set", lambda: c.set("/py/k", "v3"))
step("read quorum", lambda: c.read("/py/k", quorum=True))
step("write int value", lambda: c.write("/py/n", 42))
step("read int value", lambda: c.read("/py/n"))
step("write empty value", lambda: c.write("/py/empty", ""))
step("read empty value", lambda: c.read("/py/empty"))
step("write unicode", lambda: c.write("/py/u", "h\u00e9llo \u2603"))
step("read unicode", lambda: c.read("/py/u"))
step("write key with spaces", lambda: c.write("/py/a b", "x"))
step("read key with spaces", lambda: c.read("/py/a b"))
step("write no leading slash", lambda: c.write("py/noslash", "x"))
step("contains yes", lambda: "/py/k" in c)
step("contains no", lambda: "/py/nope" in c)
step("delete", lambda: c.delete("/py/k"))
step("read deleted", lambda: c.read("/py/k"))
step("delete missing", lambda: c.delete("/py/k"))
step("write for pop", lambda: c.write("/py/p", "popped"))
step("pop", lambda: node_str(c.pop("/py/p")))

# --- directories ---------------------------------------------------------------------------
step("mkdir", lambda: c.write("/py/d", None, dir=True))
step("mkdir again", lambda: c.write("/py/d", None, dir=True))
step("mkdir prevExist=false", lambda: c.write("/py/d", None, dir=True, prevExist=False))
step("dir with value", lambda: c.write("/py/d2", "x", dir=True))
step("write in dir", lambda: c.write("/py/d/a", "1"))
step("write nested", lambda: c.write("/py/d/sub/b", "2"))
step("write nested 2", lambda: c.write("/py/d/sub/c", "3"))
step("read dir", lambda: c.read("/py/d"))
step("read dir recursive", lambda: c.read("/py/d", recursive=True))
step("read dir recursive sorted", lambda: c.read("/py/d", recursive=True, sorted=True), sorted=True)
step("leaves", lambda: [node_str(x) for x in c.read("/py/d", recursive=True, sorted=True).leaves])
step("subtree", lambda: [x.key for x in c.read("/py/d", recursive=True, sorted=True).get_subtree()])
step("children of leaf", lambda: [x.key for x in c.read("/py/d/a").children])
step("read value as dir", lambda: c.read("/py/d/a/x"))
step("write under a file", lambda: c.write("/py/d/a/x", "1"))
step("write value over dir", lambda: c.write("/py/d", "v"))
step("delete dir as file", lambda: c.delete("/py/d"))
step("delete non-empty dir", lambda: c.delete("/py/d", dir=True))
step("delete empty dir", lambda: (c.write("/py/e", None, dir=True), c.delete("/py/e", dir=True))[1])
step("delete file with dir=true", lambda: c.delete("/py/d/a", dir=True))
step("delete recursive", lambda: c.delete("/py/d", recursive=True))
step("read deleted dir", lambda: c.read("/py/d"))
step("delete root", lambda: c.delete("/", recursive=True))
step("write root", lambda: c.write("/", "x"))
step("update dir", lambda: c.update(c.write("/py/ud", None, dir=True, ttl=100)))
step("read root", lambda: sorted(x["key"] for x in c.read("/")._children))

# --- TTL and refresh -----------------------------------------------------------------------
step("ttl write", lambda: c.write("/py/t", "tv", ttl=100))
step("ttl read", lambda: c.read("/py/t"))
step("refresh", lambda: c.refresh("/py/t", ttl=50))
step("read refreshed", lambda: c.read("/py/t"))
step("refresh missing", lambda: c.refresh("/py/missing", ttl=5))
step("refresh with value", lambda: c.write("/py/t", "new", ttl=30, refresh=True, prevExist=True))
step("refresh without ttl", lambda: c.write("/py/t", None, refresh=True, prevExist=True))
step("ttl not a number", lambda: c.write("/py/t2", "x", ttl="abc"))
step("ttl negative", lambda: c.write("/py/t2", "x", ttl=-1))
t2 = step("ttl zero", lambda: c.write("/py/t2", "x", ttl=0))
# Its expiry takes an index at the leader's next expiry tick: wait for it, so that the
# indexes after this do not depend on when that tick comes.
step("ttl zero expires", lambda: c.watch("/py/t2", index=t2.modifiedIndex + 1, timeout=10))
step("ttl dir", lambda: c.write("/py/tdir", None, dir=True, ttl=100))
step("remove ttl", lambda: c.write("/py/t", "tv", ttl="", prevExist=True))
short = c.write("/py/short", "s", ttl=1)
step("short ttl written", lambda: result_str(short))
step("watch expiry", lambda: c.watch("/py/short", index=short.modifiedIndex + 1, timeout=10))
step("read expired", lambda: c.read("/py/short"))
short = c.write("/py/short2", "s", ttl=2)
time.sleep(1)
step("refresh keeps alive", lambda: c.refresh("/py/short2", ttl=2))
time.sleep(1.3)
step("read refreshed short", lambda: c.read("/py/short2").value)

# --- compare and swap ----------------------------------------------------------------------
c.write("/py/cas", "one")
step("test_and_set ok", lambda: c.test_and_set("/py/cas", "two", "one"))
step("test_and_set fail", lambda: c.test_and_set("/py/cas", "three", "one"))
step("test_and_set ttl", lambda: c.test_and_set("/py/cas", "three", "two", ttl=100))
step("test_and_set missing", lambda: c.test_and_set("/py/cas-missing", "x", "y"))
cur = c.read("/py/cas")
step("prevIndex ok", lambda: c.write("/py/cas", "four", prevIndex=cur.modifiedIndex))
step("prevIndex fail", lambda: c.write("/py/cas", "five", prevIndex=cur.modifiedIndex))
step("prevIndex not a number", lambda: c.write("/py/cas", "five", prevIndex="abc"))
step("prevIndex and prevValue fail", lambda: c.write("/py/cas", "five", prevIndex=1, prevValue="nope"))
step("prevExist false on existing", lambda: c.write("/py/cas", "x", prevExist=False))
step("prevExist false new", lambda: c.write("/py/cas-new", "x", prevExist=False))
step("prevExist true missing", lambda: c.write("/py/cas-none", "x", prevExist=True))
step("prevExist true existing", lambda: c.write("/py/cas-new", "y", prevExist=True))
step("prevExist bad", lambda: c.write("/py/cas-new", "y", prevExist="maybe"))
step("prevValue on dir", lambda: (c.write("/py/casdir", None, dir=True), c.write("/py/casdir", "x", prevValue="x"))[1])
step("prevIndex on dir", lambda: c.write("/py/casdir", "x", prevIndex=1))
step("delete prevValue fail", lambda: c.delete("/py/cas", prevValue="nope"))
step("delete prevIndex fail", lambda: c.delete("/py/cas", prevIndex=1))
step("delete prevValue ok", lambda: c.delete("/py/cas", prevValue="four"))
upd = c.read("/py/cas-new")
upd.value = "updated"
step("update ok", lambda: c.update(upd))
upd.value = "stale"
step("update stale", lambda: c.update(upd))
ttl_obj = c.write("/py/upd-ttl", "a", ttl=100)
ttl_obj.value = "b"
step("update keeps ttl", lambda: c.update(ttl_obj))

# --- append: in-order keys -----------------------------------------------------------------


def inorder(r):
    # The key's last segment is the createdIndex, zero-padded to 20 digits.
    name = r.key.rsplit("/", 1)[1]
    return "%s:%s len=%d value=%s newKey=%s" % (r.action, rel(int(name)), len(name), r.value, r.newKey)


step("append 1", lambda: inorder(c.write("/py/q", "first", append=True)))
step("append 2", lambda: inorder(c.write("/py/q", "second", append=True)))
step("append ttl", lambda: inorder(c.write("/py/q", "third", append=True, ttl=100)))
step("append dir", lambda: c.write("/py/q", None, append=True, dir=True).dir)
step("append to file", lambda: c.write("/py/q/%s" % "x", "1") and c.write("/py/q/x", "v", append=True))
def qname(key):
    name = key.rsplit("/", 1)[1]
    return rel(int(name)) if re.fullmatch(r"\d{20}", name) else name


step("read queue sorted", lambda: [(qname(x.key), x.value) for x in c.read("/py/q", sorted=True).leaves])
step("read queue sorted recursive", lambda: [qname(x.key) + ("/" if x.dir else "") for x in c.read("/py/q", sorted=True, recursive=True).get_subtree()])

# --- hidden nodes --------------------------------------------------------------------------
step("write hidden", lambda: c.write("/py/h/_hidden", "secret"))
step("write visible", lambda: c.write("/py/h/visible", "shown"))
step("write hidden dir", lambda: c.write("/py/h/_hdir/x", "1"))
step("read dir hides", lambda: c.read("/py/h", recursive=True))
step("read hidden", lambda: c.read("/py/h/_hidden"))
step("read hidden dir", lambda: c.read("/py/h/_hdir", recursive=True))
hw = c.read("/py/h").etcd_index
c.write("/py/h/_hidden", "changed")
c.write("/py/h/visible", "changed")
step("recursive watch from history shows hidden", lambda: c.watch("/py/h", index=hw + 1, recursive=True, timeout=5))
step("watch hidden directly", lambda: c.watch("/py/h/_hidden", index=hw + 1, timeout=5))
step("delete hidden", lambda: c.delete("/py/h/_hidden"))

# --- watches -------------------------------------------------------------------------------
w0 = c.write("/py/w/k", "w0")
c.write("/py/w/k", "w1")
c.write("/py/w/other", "o1")
c.write("/py/w/sub/deep", "d1")
step("watch with index", lambda: c.watch("/py/w/k", index=w0.modifiedIndex))
step("watch with next index", lambda: c.watch("/py/w/k", index=w0.modifiedIndex + 1))
step("watch recursive from index", lambda: c.watch("/py/w", index=w0.modifiedIndex + 2, recursive=True))
step("watch recursive deep", lambda: c.watch("/py/w", index=w0.modifiedIndex + 3, recursive=True))
step("watch not recursive skips child", lambda: c.watch("/py/w", index=w0.modifiedIndex, timeout=1))
step("watch timeout", lambda: c.watch("/py/w/k", timeout=0.5))
step("read wait=true raw", lambda: c.read("/py/w/k", wait=True, waitIndex=w0.modifiedIndex))
step("watch index not a number", lambda: c.read("/py/w/k", wait=True, waitIndex="abc"))
step("watch missing key with index", lambda: c.watch("/py/w/none", index=w0.modifiedIndex, timeout=1))


def watch_live(key, write, recursive=None):
    """A watch with no index sees only what happens after it: the write waits until the
    server counts one more watcher (store stats), so exactly one write is made."""
    box = {}
    # The watches that timed out before are gone once the server saw their connections close.
    deadline = time.time() + 10
    while wc.store_stats["watchers"] > 0 and time.time() < deadline:
        time.sleep(0.02)
    before = wc.store_stats["watchers"]

    def run():
        try:
            box["r"] = c.watch(key, recursive=recursive, timeout=10)
        except Exception as e:
            box["e"] = e

    t = threading.Thread(target=run)
    t.start()
    deadline = time.time() + 10
    while wc.store_stats["watchers"] <= before and time.time() < deadline:
        time.sleep(0.02)
    write()
    t.join(10)
    if "e" in box:
        raise box["e"]
    r = box["r"]
    return "action=%s key=%s value=%r m=%s" % (r.action, r.key, r.value, rel(r.modifiedIndex))


wc = client()
step("watch without index", lambda: watch_live("/py/w/live", lambda: wc.write("/py/w/live", "L")))
step("watch recursive without index", lambda: watch_live("/py/w", lambda: wc.write("/py/w/sub/live", "R"), recursive=True))
step("watch dir event", lambda: watch_live("/py/w2", lambda: wc.write("/py/w2", None, dir=True, prevExist=False)))

# A live event on a watch given the next index: no race, the event comes whenever.
nxt = c.read("/py/w").etcd_index + 1
tl = threading.Timer(0.3, lambda: wc.delete("/py/w/other"))
tl.start()
step("watch live delete", lambda: c.watch("/py/w/other", index=nxt, timeout=10))
tl.join()

ew = c.write("/py/ew/a", "1")
c.write("/py/ew/b", "2")
c.write("/py/ew/a", "3")


def eternal(n):
    out = []
    gen = c.eternal_watch("/py/ew", index=ew.modifiedIndex, recursive=True)
    threading.Timer(0.3, lambda: wc.delete("/py/ew/b")).start()
    for ev in gen:
        out.append("%s %s=%r m=%s" % (ev.action, ev.key, ev.value, rel(ev.modifiedIndex)))
        if len(out) == n:
            break
    return "; ".join(out)


step("eternal_watch 4 events", lambda: eternal(4))

# A directory's TTL, and watches on what a directory's removal takes along.
dt = c.write("/py/dttl", None, dir=True, ttl=1)
c.write("/py/dttl/child", "c")
step("child watch sees its dir expire", lambda: c.watch("/py/dttl/child", index=dt.modifiedIndex + 2, timeout=10))
step("expired dir", lambda: c.read("/py/dttl"))
rd = c.write("/py/rd/a/b", "x")
c.delete("/py/rd", recursive=True)
step("watch below a deleted dir, from history", lambda: c.watch("/py/rd/a/b", index=rd.modifiedIndex + 1, timeout=2))
step("recursive watch of the deleted dir", lambda: c.watch("/py/rd", index=rd.modifiedIndex + 1, recursive=True, timeout=2))
step("watch a sibling with the dir's prefix", lambda: c.watch("/py/rdx", index=rd.modifiedIndex + 1, timeout=1))
step("read with timeout", lambda: c.read("/py/base", timeout=5).value)

# Keys that python-etcd puts into the URL as they are (it does not escape them).
step("write key with %41", lambda: c.write("/py/esc/p%41", "pct"))
step("read key with A", lambda: c.read("/py/esc/pA"))
step("write key with ?", lambda: c.write("/py/esc/q?x=1", "query"))
step("write key with #", lambda: c.write("/py/esc/h#frag", "hash"))
step("write key with //", lambda: c.write("/py/esc//double", "slashes"))
step("write key with ..", lambda: c.write("/py/esc/../esc/dots", "dots"))
step("list escaped", lambda: c.read("/py/esc", recursive=True))

# Past the 1000-event history: the watch of an old index is refused.
old = c.write("/py/cleared", "start")


def fill(n, threads=8):
    def run(i):
        cl = client()
        for j in range(i, n, threads):
            cl.write("/py/fill/%d" % (j % 50), j)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


fill(1010)
now = c.read("/py/cleared").etcd_index
step("index after fill", lambda: rel(now))
step("watch cleared index", lambda: c.watch("/py/cleared", index=old.modifiedIndex, timeout=2))
step("watch oldest kept", lambda: c.watch("/py/fill", index=now - 999, recursive=True, timeout=2).modifiedIndex - (now - 999))
step("watch just cleared", lambda: c.watch("/py/fill", index=now - 1000, recursive=True, timeout=2))
step("watch future index", lambda: c.watch("/py/cleared", index=now + 1, timeout=0.5))

# --- errors from the server's validation -------------------------------------------------
step("read bad recursive", lambda: c.read("/py/base", recursive="maybe"))
step("read bad sorted", lambda: c.read("/py/base", sorted="maybe"))
step("read bad wait", lambda: c.read("/py/base", wait="maybe"))
step("write dir with value (client)", lambda: c.write("/py/x", "v", dir=True))
step("raw bad method", lambda: c.api_execute("/v2/keys/py/base", "PATCH"))
step("raw path", lambda: c.api_execute("py", "GET"))
step("raw unknown route", lambda: c.api_execute("/v2/nothing", "GET").data)
step("raw keys prefix GET", lambda: json.loads(c.api_execute("/v2/keys", "GET").data)["action"])

# --- members, leader, stats, versions ------------------------------------------------------


def urls(xs):
    return sorted(norm_text(x) for x in xs)


step("machines", lambda: urls(c.machines))
# Member names are the harness's choice: shown as whether each has one.
step("members", lambda: sorted((bool(m["name"]), urls(m["peerURLs"]), urls(m["clientURLs"])) for m in c.members.values()))
step("members ids are keys", lambda: all(k == m["id"] for k, m in c.members.items()))
step("leader", lambda: (lambda l: (sorted(l.keys()), l["name"] in [m["name"] for m in c.members.values()]))(c.leader))
step("stats keys", lambda: sorted(c.stats.keys()))
step("stats leaderInfo keys", lambda: sorted(c.stats["leaderInfo"].keys()))
step("stats name is this member's", lambda: [m["name"] for m in c.members.values() if c.base_uri in m["clientURLs"]] == [c.stats["name"]])
step("stats state", lambda: c.stats["state"] in ("StateLeader", "StateFollower"))
step("stats leader is a member", lambda: c.stats["leaderInfo"]["leader"] in c.members)
step("store_stats keys", lambda: sorted(c.store_stats.keys()))
# The count itself depends on when the server noticed the timed-out watches' connections go.
step("store_stats counts are numbers", lambda: all(isinstance(v, int) for v in c.store_stats.values()))
step("leader_stats keys", lambda: (lambda s: (sorted(s.keys()), sorted(s.get("followers", {}).keys()) == sorted(k for k in c.members if k != s.get("leader"))))(c.leader_stats))
step("version", lambda: c.version)
step("cluster_version", lambda: c.cluster_version)
step("expected_cluster_id", lambda: client(expected_cluster_id="0123456789abcdef").read("/py/base"))
step("cluster id learned", lambda: (lambda cl: (cl.read("/py/base"), re.fullmatch(r"[0-9a-f]+", cl.expected_cluster_id or "") is not None)[1])(client()))

# --- the lock recipe: in-order keys under /_locks plus watches -------------------------
lc = client()
lock1 = etcd.Lock(lc, "res")
step("lock acquire", lambda: lock1.acquire(lock_ttl=60))
step("lock is_acquired", lambda: lock1.is_acquired)
step("lock key in-order", lambda: re.sub(r"\d{20}$", "<seq>", lock1.lock_key))
step("lock key value is uuid", lambda: c.read(lock1.lock_key).value == lock1.uuid)
lock2 = etcd.Lock(client(), "res")
step("lock2 non-blocking", lambda: lock2.acquire(blocking=False, lock_ttl=60))
step("lock2 not acquired", lambda: lock2.is_acquired)
order = []


def waiter():
    lock2.acquire(blocking=True, lock_ttl=60)
    order.append("lock2 acquired")


tw = threading.Thread(target=waiter)
tw.start()
time.sleep(0.5)
order.append("lock1 released")
lock1.release()
tw.join(10)
step("lock2 acquires after release", lambda: order)
step("lock1 is_acquired after release", lambda: lock1.is_acquired)
step("lock keys", lambda: len(list(c.read("/_locks/res", recursive=True).leaves)))
lock2.release()
step("lock keys after release", lambda: [x.key for x in c.read("/_locks/res", recursive=True).leaves if not x.dir])


def with_lock():
    with etcd.Lock(client(), "ctx") as lk:
        inside = lk.is_acquired
    return (inside, len([x for x in c.read("/_locks/ctx", recursive=True).leaves if not x.dir]))


step("lock as context manager", with_lock)
lock3 = etcd.Lock(client(), "exp")
lock3.acquire(lock_ttl=60)
c.delete(lock3.lock_key)
step("lock gone", lambda: lock3.is_acquired)
lock4 = etcd.Lock(client(), "ttl")
lock4.acquire(lock_ttl=1)
step("lock with ttl expires", lambda: c.watch(lock4.lock_key, index=c.read(lock4.lock_key).modifiedIndex + 1, timeout=10).action)
step("expired lock not acquired", lambda: lock4.is_acquired)
step("release of an expired lock", lambda: lock4.release())
step("lock bad uuid", lambda: setattr(etcd.Lock(client(), "exp"), "uuid", "nope"))

# --- auth (v2): users, roles, enable/disable, permission denied ----------------------------
Auth = etcd.auth.Auth
EtcdUser = etcd.auth.EtcdUser
EtcdRole = etcd.auth.EtcdRole
step("auth active", lambda: Auth(c).active)


def names(xs):
    # etcd 3.4 lists users and roles as objects; sorted by their JSON to print them in one order.
    return sorted(json.dumps(x, sort_keys=True) for x in xs) if xs is not None else xs


step("users before", lambda: names(EtcdUser(c, "x").names))
step("roles before", lambda: names(EtcdRole(c, "x").names))
step("read missing user", lambda: EtcdUser(c, "nobody").read())
step("read missing role", lambda: EtcdRole(c, "nobody").read())
step("enable without root", lambda: setattr(Auth(c), "active", True))


def mk_user(name, pw, roles):
    u = EtcdUser(c, name)
    u.password = pw
    u.roles = roles
    u.write()
    u2 = EtcdUser(c, name)
    u2.read()
    return (u2.name, sorted(u2.roles))


step("create root", lambda: mk_user("root", "rootpw", []))
step("create role", lambda: (lambda r: (r.grant("/py/secret/*", "R"), r.grant("/py/open/*", "RW"), r.write(), names(EtcdRole(c, "reader").names))[3])(EtcdRole(c, "reader")))
step("read role", lambda: (lambda r: (r.read(), sorted(r.acls.items()))[1])(EtcdRole(c, "reader")))
step("create alice", lambda: mk_user("alice", "alicepw", ["reader"]))
step("users", lambda: names(EtcdUser(c, "x").names))
step("roles", lambda: names(EtcdRole(c, "x").names))
step("str user", lambda: json.loads(str(EtcdUser(c, "alice")))["user"])
c.write("/py/secret/a", "s")
step("enable", lambda: setattr(Auth(c), "active", True))
step("auth active after enable", lambda: Auth(c).active)
step("anonymous read (guest)", lambda: c.read("/py/secret/a").value)
rootc = client(username="root", password="rootpw")
alice = client(username="alice", password="alicepw")
bad = client(username="alice", password="wrong")


def revoke_guest():
    g = EtcdRole(rootc, "guest")
    g.read()
    before = sorted(g.acls.items())
    g.revoke("/*", "RW")
    g.write()
    g2 = EtcdRole(rootc, "guest")
    g2.read()
    return (before, sorted(g2.acls.items()))


step("anonymous list users", lambda: names(EtcdUser(c, "x").names))
step("revoke guest", revoke_guest)
step("anonymous read denied", lambda: c.read("/py/secret/a"))
step("anonymous write denied", lambda: c.write("/py/secret/a", "x"))
step("alice read", lambda: alice.read("/py/secret/a").value)
step("alice write denied", lambda: alice.write("/py/secret/a", "x"))
step("alice write open", lambda: alice.write("/py/open/x", "ok"))
step("alice read dir denied", lambda: alice.read("/py/secret", recursive=True))
step("alice watch", lambda: alice.watch("/py/secret/a", index=BASE, timeout=1).action)
step("alice list users denied", lambda: names(EtcdUser(alice, "x").names))
step("alice creates user denied", lambda: (lambda u: (setattr(u, "password", "p"), u.write()))(EtcdUser(alice, "eve")))
step("bad password", lambda: bad.read("/py/secret/a"))
step("root read", lambda: rootc.read("/py/secret/a").value)
step("root write", lambda: rootc.write("/py/secret/a", "r"))
step("root machines", lambda: urls(rootc.machines))
step("anonymous stats", lambda: len(c.store_stats))


def put_user(body):
    # EtcdUser.read() cannot parse etcd 3.4's user (its roles are objects, python-etcd 0.4.5
    # puts them in a set: TypeError), so changes go through the client's raw JSON call.
    r = rootc.api_execute_json("/v2/auth/users/alice", rootc._MPUT, params=dict(body, user="alice"))
    return json.loads(r.data.decode("utf-8"))


step("alice read user", lambda: EtcdUser(rootc, "alice").read())
step("alice roles revoked", lambda: names(put_user({"revoke": ["reader"]})["roles"]))
step("alice read after revoke", lambda: alice.read("/py/secret/a"))
step("alice roles granted", lambda: names(put_user({"grant": ["reader"]})["roles"]))
step("alice grant missing role", lambda: put_user({"grant": ["nope"]}))
step("alice password change", lambda: (put_user({"password": "newpw"}), client(username="alice", password="newpw").read("/py/open/x").value)[1])
step("old password", lambda: alice.read("/py/open/x"))
step("role revoke path", lambda: (lambda r: (r.read(), r.revoke("/py/open/*", "W"), r.write(), sorted(r.acls.items()))[3])(EtcdRole(rootc, "reader")))
step("alice write open revoked", lambda: client(username="alice", password="newpw").write("/py/open/x", "no"))
step("delete role in use", lambda: EtcdRole(rootc, "reader").delete())
step("delete root denied", lambda: EtcdUser(rootc, "root").delete())
step("delete root denied (raw)", lambda: rootc.api_execute("/v2/auth/users/root", rootc._MDELETE))
step("delete guest role", lambda: EtcdRole(rootc, "guest").delete())
step("delete root role", lambda: rootc.api_execute("/v2/auth/roles/root", rootc._MDELETE))
step("disable as alice", lambda: setattr(Auth(client(username="alice", password="newpw")), "active", False))
step("disable as root", lambda: setattr(Auth(rootc), "active", False))
step("auth active after disable", lambda: Auth(c).active)
step("anonymous read after disable", lambda: c.read("/py/secret/a").value)
step("delete alice", lambda: EtcdUser(c, "alice").delete())
step("delete missing user", lambda: EtcdUser(c, "alice").delete())
step("users after", lambda: names(EtcdUser(c, "x").names))
step("index after auth", lambda: rel(c.write("/py/after-auth", "x").modifiedIndex))

# --- reconnect: allow_reconnect with several machines -----------------------------------


class Forwarder:
    """A TCP forwarder in front of the server: the client's first machine, which goes away."""

    def __init__(self, port):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        self.conns = []
        self.closed = False
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.closed:
            try:
                a, _ = self.sock.accept()
            except OSError:
                return
            b = socket.create_connection((HOST, PORT))
            self.conns += [a, b]
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self.pipe, args=(x, y), daemon=True).start()

    def pipe(self, x, y):
        try:
            while True:
                d = x.recv(65536)
                if not d:
                    break
                y.sendall(d)
        except OSError:
            pass
        for s in (x, y):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.closed = True
        self.sock.close()
        for s in self.conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass


fw = Forwarder(PROXY_PORT)
rc = etcd.Client(host=(("127.0.0.1", PROXY_PORT), (HOST, PORT)), allow_reconnect=True)
step("reconnect: starts on the forwarder", lambda: rc.base_uri == "http://127.0.0.1:%d" % PROXY_PORT)
step("reconnect: machines cache", lambda: urls(rc._machines_cache))
step("reconnect: write", lambda: rc.write("/py/rc", "1").value)
fw.close()
step("reconnect: write after the machine went away", lambda: rc.write("/py/rc", "2").value)
step("reconnect: moved on", lambda: norm_text(rc.base_uri))
step("reconnect: read", lambda: rc.read("/py/rc").value)
step("no reconnect: connection failed", lambda: etcd.Client(port=PROXY_PORT).read("/py/rc"))
step("no reconnect with several hosts", lambda: etcd.Client(host=((HOST, PORT), (HOST, PORT))))
step("reconnect: every machine down", lambda: etcd.Client(host=(("127.0.0.1", PROXY_PORT),), allow_reconnect=True, use_proxies=True).read("/py/rc"))

if args.stop_cmd and len(MEMBERS) > 1:
    mc = etcd.Client(host=tuple(MEMBERS), allow_reconnect=True)
    step("stop member: starts on the first", lambda: mc.base_uri == "http://%s:%d" % MEMBERS[0])
    step("stop member: write", lambda: mc.write("/py/stop", "before").value)
    subprocess.run(args.stop_cmd, shell=True, check=True)
    step("stop member: read through another", lambda: mc.read("/py/stop").value)
    step("stop member: moved", lambda: mc.base_uri != "http://%s:%d" % MEMBERS[0])

    def write_retry():
        # The stopped member may have been the leader: writes wait for the next one.
        deadline = time.time() + 15
        while True:
            try:
                return mc.write("/py/stop", "after").value
            except etcd.EtcdException:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)

    step("stop member: write through another", write_retry)
    step("stop member: machines still lists it", lambda: len(mc.machines))

emit("end", "ok")
