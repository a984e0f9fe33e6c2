#!/usr/bin/python3
"""Drives python-etcd3 (0.12, grpcio underneath) through its whole API against one etcd v3
endpoint and prints one normalized line per step, so the output of a run against etcd
3.4.23 and of one against kvctl can be diffed.

Normalized: revisions are printed relative to the revision the scenario starts at (r+N),
lease ids as L1, L2… in order of appearance (an id the scenario chose is printed as is),
member ids by member name, ports of URLs the servers chose as PORT; times as bounds. What
legitimately differs between two servers (cluster and member ids in headers, raft term,
database size, the KV hash) is printed only as a property ("int", ">0").

Usage: python-etcd3.py --port P [--members N]      the main scenario (fresh server;
                                                   --wait S: for it to answer first)
       python-etcd3.py --port P --tls CA,CERT,KEY  TLS clients (server with
                                                   --client-cert-auth and that CA)
Sections that leave the server unusable (adding a member to a one-member cluster loses
its quorum) come last. Exit status 0 unless the scenario itself broke (a step's exception
is output, not failure).
"""
import argparse
import io
import queue
import re
import sys
import threading
import time

import grpc

import etcd3
import etcd3.etcdrpc as rpc
from etcd3.etcdrpc import auth_pb2
from etcd3 import exceptions as exc
from etcd3 import transactions as txn_mod

TIMEOUT = 10  # seconds, each unary call: a hang shows as ConnectionTimeoutError, not a stuck run

args = None
base = 0
lease_names = {}
member_names = {}


def out(name, text):
    print(f"{name}: {text}", flush=True)


def describe_error(e):
    if isinstance(e, grpc.RpcError) and hasattr(e, "code"):
        return f"ERR RpcError {e.code().name} {e.details()}"
    if isinstance(e, exc.RevisionCompactedError):
        return f"ERR RevisionCompactedError compacted={rel(e.compacted_revision)}"
    text = str(e)
    return f"ERR {type(e).__name__}" + (f": {text}" if text else "")


def step(name, fn):
    try:
        out(name, fn())
    except Exception as e:  # every outcome is a line: compared, not judged, here
        out(name, describe_error(e))


def rel(rev):
    return f"r+{rev - base}" if rev else "0"


def lease_name(lease_id):
    if lease_id == 0:
        return "0"
    if lease_id in FIXED_LEASES:
        return str(lease_id)
    if lease_id not in lease_names:
        lease_names[lease_id] = f"L{len(lease_names) + 1}"
    return lease_names[lease_id]


FIXED_LEASES = {12345, 777}


def member_name(member_id):
    return member_names.get(member_id, "unknown" if member_id else "0")


def s(b):
    if b is None:
        return "None"
    try:
        text = b.decode("utf-8")
        return text if text.isprintable() else repr(b)
    except UnicodeDecodeError:
        return repr(b)


def meta(m):
    if m is None:
        return "meta=None"
    return f"key={s(m.key)} create={rel(m.create_revision)} mod={rel(m.mod_revision)} ver={m.version} lease={lease_name(m.lease_id)}"


def kv_line(kv):
    """A mvccpb.KeyValue."""
    return f"{s(kv.key)}={s(kv.value)}@c{rel(kv.create_revision)}/m{rel(kv.mod_revision)}/v{kv.version}/{lease_name(kv.lease)}"


def pairs(seq):
    return "[" + ", ".join(f"{s(m.key)}={s(v)}" for v, m in seq) + "]"


def ports(url):
    return re.sub(r":\d+", ":PORT", url)


def event_line(e):
    kind = type(e).__name__
    text = f"{kind} {s(e.key)}"
    if isinstance(e, etcd3.events.PutEvent):
        text += f"={s(e.value)} mod={rel(e.mod_revision)} ver={e.version}"
    else:
        text += f" mod={rel(e.mod_revision)}"
    if e._event.HasField("prev_kv"):
        text += f" prev={s(e.prev_value)}"
    return text


class Collector:
    """Watch callback target: keeps responses (or errors) in a queue."""

    def __init__(self):
        self.q = queue.Queue()

    def __call__(self, response):
        self.q.put(response)

    def take(self, n_events, timeout=10):
        """Event lines of the next responses until n_events arrived; a response's events
        are joined with '+' so that batching (one response per revision) shows."""
        got, lines, deadline = 0, [], time.time() + timeout
        while got < n_events:
            try:
                r = self.q.get(timeout=max(0.01, deadline - time.time()))
            except queue.Empty:
                lines.append(f"TIMEOUT after {got} events")
                break
            if isinstance(r, Exception):
                lines.append(describe_error(r))
                break
            got += len(r.events)
            lines.append("+".join(event_line(e) for e in r.events) or "(no events)")
        return " | ".join(lines)

    def quiet(self, wait=0.3):
        try:
            r = self.q.get(timeout=wait)
        except queue.Empty:
            return "none"
        if isinstance(r, Exception):
            return describe_error(r)
        return "+".join(event_line(e) for e in r.events) or "(no events)"


class LeaseCompare(txn_mod.BaseCompare):
    """python-etcd3 0.12 has no LEASE compare target (etcd 3.3+): built here on its own base
    class, the way its Value/Version/Create/Mod are."""

    def build_compare(self, compare):
        compare.target = rpc.Compare.LEASE
        compare.lease = int(self.value)


def txn_responses(responses):
    lines = []
    for r in responses:
        if isinstance(r, list):
            lines.append("range" + pairs(r))
            continue
        kind = r.WhichOneof("response")
        if kind == "response_put":
            p = r.response_put
            lines.append("put" + (f"(prev {kv_line(p.prev_kv)})" if p.HasField("prev_kv") else ""))
        elif kind == "response_delete_range":
            d = r.response_delete_range
            lines.append(f"delete({d.deleted}" + "".join(f" {kv_line(kv)}" for kv in d.prev_kvs) + ")")
        elif kind == "response_txn":
            t = r.response_txn
            inner = []
            for ir in t.responses:
                k = ir.WhichOneof("response")
                if k == "response_range":
                    inner.append("range[" + ", ".join(kv_line(kv) for kv in ir.response_range.kvs) + "]")
                elif k == "response_delete_range":
                    inner.append(f"delete({ir.response_delete_range.deleted})")
                else:
                    inner.append(k.replace("response_", ""))
            lines.append(f"txn({t.succeeded}: {', '.join(inner)})")
    return "; ".join(lines)


def txn(c, compare, success=None, failure=None):
    ok, responses = c.transaction(compare=compare, success=success or [], failure=failure or [])
    return f"{ok} {txn_responses(responses)}"


def new_client(**kw):
    return etcd3.client(host=args.host, port=args.port, timeout=TIMEOUT, **kw)


# --------------------------------------------------------------------------- sections


def kv(c):
    T = c.transactions
    step("put a=1", lambda: f"rev={rel(c.put('a', '1').header.revision)}")
    step("put a=2 prev_kv", lambda: (lambda r: f"rev={rel(r.header.revision)} prev={kv_line(r.prev_kv)}")(c.put("a", "2", prev_kv=True)))
    step("put new prev_kv", lambda: f"has_prev={c.put('b', 'x', prev_kv=True).HasField('prev_kv')}")
    step("get a", lambda: (lambda v, m: f"{s(v)} {meta(m)}")(*c.get("a")))
    step("get a serializable", lambda: (lambda v, m: f"{s(v)} {meta(m)}")(*c.get("a", serializable=True)))
    step("get missing", lambda: str(c.get("missing")))
    step("get_response missing", lambda: (lambda r: f"count={r.count} kvs={len(r.kvs)} more={r.more}")(c.get_response("missing")))
    step("put empty value", lambda: (c.put("empty", ""), "{} {}".format(*(lambda v, m: (repr(v), meta(m)))(*c.get("empty"))))[1])
    step("put empty key", lambda: c.put("", "v"))
    step("put binary", lambda: (c.put(b"bin\x00\xff", b"\x00\x01\xfe"), repr(c.get(b"bin\x00\xff")[0]))[1])
    step("put utf8", lambda: (c.put("ключ/日本", "värde"), s(c.get("ключ/日本")[0]))[1])
    step("put 1.6MiB value", lambda: c.put("big", b"x" * (1600 * 1024)))
    step("put 3MiB value", lambda: c.put("big", b"x" * (3 * 1024 * 1024)))
    step("put 1MiB value", lambda: (c.put("big", b"y" * (1024 * 1024)), len(c.get("big")[0]))[1])
    step("delete big", lambda: c.delete("big"))
    # Keys whose sort orders differ by every target: key, version, create, mod and value.
    for k, v in [("r/c", "1"), ("r/a", "3"), ("r/b", "2"), ("r/b", "2b"), ("r/d", "0"), ("r/a", "3a"), ("r/a", "3b")]:
        c.put(k, v)
    step("get_prefix r/", lambda: pairs(c.get_prefix("r/")))
    step("get_prefix r/ metadata", lambda: "; ".join(meta(m) for _, m in c.get_prefix("r/")))
    step("get_prefix keys_only", lambda: pairs(c.get_prefix("r/", keys_only=True)))
    step("get_prefix descend", lambda: pairs(c.get_prefix("r/", sort_order="descend")))
    step("get_prefix_response r/", lambda: (lambda r: f"count={r.count} more={r.more} kvs={len(r.kvs)}")(c.get_prefix_response("r/")))
    step("get_prefix none/", lambda: pairs(c.get_prefix("none/")))
    step("get_prefix key=", lambda: c.get_prefix_response("r/", key="x"))
    step("get_prefix ends in 0xff", lambda: pairs(c.get_prefix(b"bin\x00\xff")))
    for order in (None, "ascend", "descend"):
        for target in ("key", "version", "create", "mod", "value"):
            step(f"get_range r/a..r/d {order} {target}",
                 lambda: pairs(c.get_range("r/a", "r/d", sort_order=order, sort_target=target)))
    step("get_range bad order", lambda: pairs(c.get_range("r/a", "r/z", sort_order="sideways")))
    step("get_range bad target", lambda: pairs(c.get_range("r/a", "r/z", sort_target="size")))
    step("get_range empty (end<start)", lambda: pairs(c.get_range("r/d", "r/a")))
    step("get_range from \\0 (all)", lambda: len(list(c.get_range("\0", "\0"))))
    step("get_all", lambda: pairs(c.get_all()))
    step("get_all keys_only", lambda: pairs(c.get_all(keys_only=True)))
    for order in ("ascend", "descend"):
        for target in ("key", "version", "create", "mod", "value"):
            step(f"get_all {order} {target}", lambda: " ".join(s(m.key) for _, m in c.get_all(sort_order=order, sort_target=target)))
    step("get_all_response count", lambda: c.get_all_response().count)
    step("put_if_not_exists new", lambda: c.put_if_not_exists("pine", "1"))
    step("put_if_not_exists existing", lambda: c.put_if_not_exists("pine", "2"))
    step("get pine", lambda: s(c.get("pine")[0]))
    step("replace match", lambda: c.replace("pine", "1", "2"))
    step("replace mismatch", lambda: c.replace("pine", "1", "3"))
    step("replace missing key", lambda: c.replace("nope", "", "x"))
    step("get pine after replace", lambda: (lambda v, m: f"{s(v)} {meta(m)}")(*c.get("pine")))
    step("delete a", lambda: c.delete("a"))
    step("delete a again", lambda: c.delete("a"))
    step("delete prev_kv response", lambda: (lambda r: f"deleted={r.deleted} prev={[kv_line(kv) for kv in r.prev_kvs]} rev={rel(r.header.revision)}")(
        c.delete("pine", prev_kv=True, return_response=True)))
    step("delete missing response", lambda: (lambda r: f"deleted={r.deleted} prev={len(r.prev_kvs)} rev={rel(r.header.revision)}")(
        c.delete("pine", prev_kv=True, return_response=True)))
    step("delete empty key", lambda: c.delete(""))
    for k in ("d/1", "d/2", "d/3", "d0"):
        c.put(k, "v" + k)
    step("delete_prefix d/", lambda: (lambda r: f"deleted={r.deleted} prev={len(r.prev_kvs)}")(c.delete_prefix("d/")))
    step("delete_prefix d/ again", lambda: (lambda r: f"deleted={r.deleted}")(c.delete_prefix("d/")))
    step("get d0 kept", lambda: s(c.get("d0")[0]))
    # delete_prefix has no prev_kv: a txn delete over the range has.
    for k in ("p/1", "p/2"):
        c.put(k, "v" + k)
    step("txn delete range prev_kv", lambda: txn(c, [], [T.delete("p/", range_end="p0", prev_kv=True)]))


def txns(c):
    T = c.transactions
    c.put("t/k", "a")
    c.put("t/k", "b")
    _, m = c.get("t/k")
    step("txn value == success put/get/delete",
         lambda: txn(c, [T.value("t/k") == "b"], [T.put("t/k", "c", prev_kv=True), T.get("t/k"), T.delete("t/none")], [T.put("t/f", "1")]))
    step("txn value == failure", lambda: txn(c, [T.value("t/k") == "zzz"], [T.put("t/k", "x")], [T.get("t/k"), T.put("t/f", "1")]))
    step("txn value != ", lambda: txn(c, [T.value("t/k") != "c"], [T.put("t/s", "1")], [T.put("t/s", "2")]))
    step("txn value <", lambda: txn(c, [T.value("t/k") < "d"], [T.get("t/k")]))
    step("txn value >", lambda: txn(c, [T.value("t/k") > "d"], [], [T.get("t/k")]))
    step("txn value on missing key", lambda: txn(c, [T.value("t/missing") == ""], [T.get("t/k")], [T.get("t/s")]))
    step("txn version ==", lambda: txn(c, [T.version("t/k") == 3], [T.get("t/k")]))
    step("txn version >", lambda: txn(c, [T.version("t/k") > 5], [], [T.get("t/k")]))
    step("txn version missing == 0", lambda: txn(c, [T.version("t/missing") == 0], [T.put("t/v0", "1")]))
    step("txn create ==", lambda: txn(c, [T.create("t/k") == m.create_revision], [T.get("t/k")]))
    step("txn create == 0 (absent)", lambda: txn(c, [T.create("t/k") == 0], [], [T.get("t/f")]))
    step("txn mod <", lambda: txn(c, [T.mod("t/k") < m.mod_revision], [], [T.get("t/k")]))
    step("txn mod >", lambda: txn(c, [T.mod("t/k") > m.mod_revision], [T.get("t/k")]))
    step("txn two compares, one false", lambda: txn(c, [T.value("t/k") == "c", T.version("t/k") == 99], [T.put("t/x", "1")], [T.get("t/k")]))
    step("txn range compare (all of t/ > 0)", lambda: txn(c, [T.version("t/", "t0") > 0], [T.get("t/", "t0")]))
    step("txn range compare value", lambda: txn(c, [T.value("t/", "t0") == "1"], [], [T.get("t/s")]))
    step("txn nested", lambda: txn(c, [T.value("t/k") == "c"], [
        T.txn([T.version("t/k") == 3], [T.put("t/n", "inner"), T.get("t/n")], [T.get("t/k")]),
        T.get("t/n"),
    ]))
    step("txn nested failure branch", lambda: txn(c, [T.value("t/k") == "c"], [
        T.txn([T.version("t/k") == 1], [T.put("t/n", "no")], [T.delete("t/n")]),
    ]))
    step("txn empty", lambda: txn(c, []))
    step("txn empty compare failure side", lambda: txn(c, [], [], [T.put("t/never", "1")]))
    step("txn duplicate put", lambda: txn(c, [], [T.put("t/d", "1"), T.put("t/d", "2")]))
    step("txn put then delete same key", lambda: txn(c, [], [T.put("t/d", "1"), T.delete("t/d")]))
    step("txn 129 ops", lambda: txn(c, [], [T.put(f"t/many/{i}", "1") for i in range(129)]))
    step("txn 128 ops", lambda: txn(c, [], [T.get("t/k") for _ in range(128)]).count("range"))
    step("txn compare without op", lambda: txn(c, [T.value("t/k")], [T.get("t/k")]))
    step("txn get range", lambda: txn(c, [], [T.get("t/", "t0")]))
    step("txn delete range", lambda: txn(c, [], [T.delete("t/", "t0", prev_kv=True)]))
    step("get_prefix t/ after", lambda: pairs(c.get_prefix("t/")))


def leases(c):
    T = c.transactions
    holder = {}

    def grant():
        lease = c.lease(10)
        holder["l"] = lease
        return f"id={lease_name(lease.id)} ttl={lease.ttl}"

    step("lease 10", grant)
    step("lease with id 12345", lambda: (lambda l: f"id={l.id} ttl={l.ttl}")(c.lease(20, lease_id=12345)))
    step("lease with id 12345 again", lambda: c.lease(20, lease_id=12345))
    step("lease ttl 1 (below minimum)", lambda: (lambda l: f"id={lease_name(l.id)} ttl={l.ttl}")(c.lease(1)))
    step("lease ttl 0", lambda: (lambda l: f"id={lease_name(l.id)} ttl={l.ttl}")(c.lease(0)))
    step("lease ttl too large", lambda: c.lease(9000000001))
    lease = holder.get("l")
    if lease is None:
        return
    step("put with lease", lambda: c.put("l/1", "v", lease=lease).header.revision > 0)
    step("put with lease id", lambda: c.put("l/2", "v", lease=lease.id).header.revision > 0)
    step("put with unknown lease", lambda: c.put("l/3", "v", lease=999999))
    step("get leased key", lambda: meta(c.get("l/1")[1]))
    step("txn put with lease", lambda: txn(c, [], [T.put("l/t", "v", lease=lease)]))
    step("txn lease compare ==", lambda: txn(c, [LeaseCompare("l/1") == lease.id], [T.get("l/1")]))
    step("txn lease compare == 0", lambda: txn(c, [LeaseCompare("l/1") == 0], [], [T.get("l/2")]))
    step("txn lease compare on missing", lambda: txn(c, [LeaseCompare("l/missing") == 0], [T.get("l/1")]))
    step("lease keys", lambda: sorted(s(k) for k in lease.keys))
    step("lease granted_ttl", lambda: lease.granted_ttl)
    step("lease remaining_ttl", lambda: (lambda t: "8..10" if 8 <= t <= 10 else t)(lease.remaining_ttl))
    step("get_lease_info", lambda: (lambda r: f"id={lease_name(r.ID)} granted={r.grantedTTL} ttl_ok={0 < r.TTL <= 10} keys={sorted(s(k) for k in r.keys)}")(
        c.get_lease_info(lease.id)))
    step("lease refresh", lambda: [f"id={lease_name(r.ID)} ttl={r.TTL}" for r in lease.refresh()])
    step("refresh_lease by id", lambda: [f"id={lease_name(r.ID)} ttl={r.TTL}" for r in c.refresh_lease(lease.id)])
    step("get_lease_info unknown", lambda: (lambda r: f"id={r.ID} ttl={r.TTL} granted={r.grantedTTL} keys={len(r.keys)}")(c.get_lease_info(4242)))
    step("refresh unknown lease", lambda: [f"id={r.ID} ttl={r.TTL}" for r in c.refresh_lease(4242)])
    col = Collector()
    wid = c.add_watch_prefix_callback("l/", col, prev_kv=True)
    step("lease revoke", lambda: lease.revoke())
    step("watch of the revoke (one response)", lambda: col.take(3))
    c.cancel_watch(wid)
    step("leased keys after revoke", lambda: pairs(c.get_prefix("l/")))
    step("lease revoke again", lambda: lease.revoke())
    step("revoke_lease unknown", lambda: c.revoke_lease(4243))
    step("get_lease_info revoked", lambda: (lambda r: f"ttl={r.TTL} keys={len(r.keys)}")(c.get_lease_info(lease.id)))
    step("refresh revoked", lambda: [f"id={lease_name(r.ID)} ttl={r.TTL}" for r in lease.refresh()])
    step("put with revoked lease", lambda: c.put("l/4", "v", lease=lease))
    step("revoke 12345", lambda: c.revoke_lease(12345))

    # A key on a short lease goes away by itself; a watcher sees the delete.
    def expiry():
        short = c.lease(2, lease_id=777)
        c.put("exp/k", "v", lease=short)
        c.put("exp/k2", "v", lease=short)
        col = Collector()
        wid = c.add_watch_prefix_callback("exp/", col)
        start = time.time()
        seen = col.take(2, timeout=12)
        took = time.time() - start
        c.cancel_watch(wid)
        return f"{seen} after_ttl={took >= 1.5} within_6s={took < 6} get={c.get('exp/k')[0]} ttl={c.get_lease_info(777).TTL}"

    step("key on lease ttl 2 expires", expiry)


def watches(c):
    T = c.transactions

    # watch(): an iterator of events and a cancel function.
    def watch_key():
        events, cancel = c.watch("w/k")
        got = []
        done = threading.Event()

        def reader():
            for e in events:
                got.append(event_line(e))
                if len(got) == 3:
                    break
            done.set()

        threading.Thread(target=reader, daemon=True).start()
        c.put("w/k", "1")
        c.put("w/other", "x")
        c.put("w/k", "2")
        c.delete("w/k")
        done.wait(10)
        cancel()
        return " | ".join(got) if done.is_set() else f"TIMEOUT {got}"

    step("watch key", watch_key)

    def watch_prefix():
        col = Collector()
        wid = c.add_watch_prefix_callback("wp/", col, prev_kv=True)
        c.put("wp/a", "1")
        c.put("wpx", "no")
        c.put("wp/a", "2")
        c.transaction(compare=[], success=[T.put("wp/b", "1"), T.put("wp/c", "1"), T.delete("wp/a")], failure=[])
        c.delete_prefix("wp/")
        got = col.take(7)
        c.cancel_watch(wid)
        return got

    step("watch_prefix prev_kv (txn batch)", watch_prefix)

    def watch_prefix_iter():
        events, cancel = c.watch_prefix("wi/")
        c.put("wi/1", "a")
        c.put("wi/2", "b")
        it = iter(events)
        first = [event_line(next(it)), event_line(next(it))]
        cancel()
        return " | ".join(first)

    step("watch_prefix iterator", watch_prefix_iter)

    def watch_response():
        responses, cancel = c.watch_response("wr/k")
        c.put("wr/k", "1")
        r = next(iter(responses))
        cancel()
        return f"header_rev={rel(r.header.revision)} events={[event_line(e) for e in r.events]}"

    step("watch_response header", watch_response)

    def history():
        rev = c.put("wh/k", "1").header.revision
        c.put("wh/k", "2")
        c.delete("wh/k")
        col = Collector()
        wid = c.add_watch_callback("wh/k", col, start_revision=rev)
        got = col.take(3)
        c.cancel_watch(wid)
        return got

    step("watch start_revision (history)", history)

    def watch_range():
        col = Collector()
        wid = c.add_watch_callback("wg/b", col, range_end="wg/d")
        for k in ("wg/a", "wg/b", "wg/c", "wg/d"):
            c.put(k, "1")
        got = col.take(2)
        c.cancel_watch(wid)
        return got

    step("watch range_end", watch_range)

    def future():
        now = c.put("wf/k", "0").header.revision
        col = Collector()
        wid = c.add_watch_callback("wf/k", col, start_revision=now + 3)
        for i in range(1, 5):
            c.put("wf/k", str(i))
        got = col.take(2)
        c.cancel_watch(wid)
        return got

    step("watch start_revision in the future", future)

    def whole_space():
        col = Collector()
        wid = c.add_watch_callback(b"\0", col, range_end=b"\0")
        c.put("ws/k", "1")
        got = col.take(1)
        c.cancel_watch(wid)
        return got

    step("watch the whole key space (\\0..\\0)", whole_space)

    def watch_once():
        threading.Timer(0.2, lambda: c.put("wo/k", "once")).start()
        return event_line(c.watch_once("wo/k", timeout=10))

    step("watch_once", watch_once)
    step("watch_once timeout", lambda: event_line(c.watch_once("wo/silent", timeout=0.5)))

    def watch_prefix_once():
        threading.Timer(0.2, lambda: c.put("wpo/k", "once")).start()
        return event_line(c.watch_prefix_once("wpo/", timeout=10))

    step("watch_prefix_once", watch_prefix_once)
    step("watch_once_response history", lambda: (lambda r: f"events={[event_line(e) for e in r.events]}")(
        c.watch_once_response("wo/k", timeout=5, start_revision=base + 1)))

    def cancel_watch():
        col = Collector()
        wid = c.add_watch_callback("wc/k", col)
        c.put("wc/k", "1")
        first = col.take(1)
        c.cancel_watch(wid)
        c.put("wc/k", "2")
        return f"{first} after_cancel={col.quiet()}"

    step("add_watch_callback + cancel_watch", cancel_watch)
    step("cancel_watch unknown id", lambda: c.cancel_watch(987654))

    def many_watchers():
        cols = [Collector() for _ in range(5)]
        ids = [c.add_watch_callback("wm/k", col) for col in cols]
        c.put("wm/k", "x")
        got = [col.take(1) for col in cols]
        for wid in ids:
            c.cancel_watch(wid)
        return f"distinct_ids={len(set(ids))} same={len(set(got)) == 1} {got[0]}"

    step("5 watchers on one key", many_watchers)
    step("watch empty key", lambda: (lambda col: (c.add_watch_callback("", col), col.quiet(0.5))[1])(Collector()))

    def watch_other_client():
        c2 = new_client()
        try:
            col = Collector()
            wid = c2.add_watch_callback("wx/k", col)
            c.put("wx/k", "from-c1")
            got = col.take(1)
            c2.cancel_watch(wid)
            return got
        finally:
            c2.close()

    step("watch on a second client", watch_other_client)

    def history_batches():
        # etcd sends a replay of more than 1000 revisions in responses of 1000 revisions.
        start = c.put("wb/k", "0").header.revision
        for i in range(1, 1200):
            c.put("wb/k", str(i))
        q = queue.Queue()
        wid = c.add_watch_callback("wb/k", q.put, start_revision=start)
        sizes, got = [], 0
        while got < 1200:
            r = q.get(timeout=10)
            if isinstance(r, Exception):
                return describe_error(r)
            sizes.append(len(r.events))
            got += len(r.events)
        c.cancel_watch(wid)
        return f"responses of {sizes} events"

    step("watch history of 1200 revisions", history_batches)

    def big_range():
        for i in range(5):
            c.put(f"wbig/{i}", b"z" * (1024 * 1024))
        try:
            return len(list(c.get_prefix("wbig/")))
        except grpc.RpcError as e:
            # The size in the text counts the header's ids, which differ between servers.
            return f"ERR RpcError {e.code().name} {re.sub(r'[0-9]+ vs', 'N vs', e.details())}"
        finally:
            c.delete_prefix("wbig/")

    step("get_prefix of 5 MiB (over grpcio's 4 MiB receive limit)", big_range)


def compaction(c):
    T = c.transactions
    first = c.put("cp/k", "1").header.revision
    c.put("cp/k", "2")
    c.put("cp/k", "3")
    last = c.get_response("cp/k").header.revision
    step("compact to last-1", lambda: c.compact(last - 1))
    step("compact same again", lambda: c.compact(last - 1))
    step("compact older", lambda: c.compact(first))
    step("compact future", lambda: c.compact(last + 1000))
    step("compact physical", lambda: c.compact(last, physical=True))
    step("get after compact", lambda: (lambda v, m: f"{s(v)} {meta(m)}")(*c.get("cp/k")))

    def compacted_callback():
        col = Collector()
        try:
            wid = c.add_watch_callback("cp/k", col, start_revision=first)
        except Exception as e:
            return f"add: {describe_error(e)}"
        got = col.take(1, timeout=5)
        c.cancel_watch(wid)
        return f"callback: {got}"

    step("watch start_revision compacted (callback)", compacted_callback)

    def compacted_iterator():
        events, cancel = c.watch("cp/k", start_revision=first)
        try:
            return [event_line(e) for e in events]
        finally:
            cancel()

    step("watch start_revision compacted (iterator)", compacted_iterator)

    def watch_at_compacted_rev():
        col = Collector()
        wid = c.add_watch_callback("cp/k", col, start_revision=last)
        got = col.take(1, timeout=5)
        c.cancel_watch(wid)
        return got

    step("watch start_revision == compacted", watch_at_compacted_rev)
    step("put after compact", lambda: rel(c.put("cp/k", "4").header.revision))
    step("txn after compact", lambda: txn(c, [T.mod("cp/k") > last], [T.get("cp/k")]))


def poll_acquire(lock, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if lock.acquire(timeout=0):
            return True
        time.sleep(0.1)
    return False


def locks(c):
    c2 = new_client()
    try:
        l1 = c.lock("res", ttl=10)
        l2 = c2.lock("res", ttl=10)
        step("lock key", lambda: l1.key)
        step("is_acquired before", lambda: l1.is_acquired())
        step("refresh before acquire", lambda: l1.refresh())
        step("acquire", lambda: l1.acquire(timeout=5))
        step("is_acquired", lambda: l1.is_acquired())
        step("lock key lease ttl", lambda: (lambda r: f"granted={r.grantedTTL} keys={[s(k) for k in r.keys]}")(c.get_lease_info(l1.lease.id)))
        step("other is_acquired", lambda: l2.is_acquired())
        # With Debian's tenacity 8, acquire() fails with a TypeError as soon as its first
        # attempt fails and it would wait (its wait callback has tenacity 4's signature);
        # timeout=0 stops before waiting, so contention is polled with that.
        step("contention: other acquire timeout=1", lambda: l2.acquire(timeout=1))
        step("contention: other acquire timeout=0", lambda: l2.acquire(timeout=0))
        step("refresh", lambda: [f"ttl={r.TTL}" for r in l1.refresh()])

        result = {}

        def waiter():
            result["acquired"] = poll_acquire(l2, 10)
            result["at"] = time.time()

        t = threading.Thread(target=waiter, daemon=True)
        t.start()
        time.sleep(0.5)
        released = time.time()
        step("release (a waiter pending)", lambda: l1.release())
        t.join(12)
        step("waiter acquired after release", lambda: f"{result.get('acquired')} within_2s={result.get('at', 1e18) - released < 2}")
        step("first is_acquired after release", lambda: l1.is_acquired())
        step("other is_acquired", lambda: l2.is_acquired())
        step("release not held", lambda: l1.release())
        step("other release", lambda: l2.release())

        def context():
            with c.lock("ctx", ttl=5) as lk:
                inside = lk.is_acquired()
            return f"inside={inside} after={c.get('/locks/ctx')[0]}"

        step("lock as context manager", context)

        def expiry():
            lk = c.lock("short", ttl=2)
            lk.acquire(timeout=5)
            other = c2.lock("short", ttl=5)
            start = time.time()
            got = poll_acquire(other, 10)
            took = time.time() - start
            other.release()
            return f"{got} after_ttl={took >= 1} within_7s={took < 7}"

        step("lock lease expiry hands over", expiry)
    finally:
        c2.close()


def maintenance(c):
    step("status", lambda: (lambda st: f"version={st.version} db_size>0={st.db_size > 0} leader_is_member={st.leader is not None} raft_index>0={st.raft_index > 0} term>0={st.raft_term > 0}")(c.status()))

    def hashes():
        h1 = c.hash()
        h2 = c.hash()
        c.put("h/k", "changed")
        h3 = c.hash()
        return f"int={isinstance(h1, int)} stable={h1 == h2} changes_on_write={h1 != h3}"

    step("hash", hashes)
    step("defragment", lambda: c.defragment())
    step("get after defragment", lambda: s(c.get("h/k")[0]))

    def snapshot():
        buf = io.BytesIO()
        c.snapshot(buf)
        return f"bytes>0={len(buf.getvalue()) > 0}"

    step("snapshot", snapshot)


def alarm_line(alarms, leader_id=None):
    """Alarms as TYPE@member; the leader (chosen by an election) shows as "leader"."""
    return "[" + ", ".join(f"{rpc.AlarmType.Name(a.alarm_type)}@{'leader' if a.member_id == leader_id else member_name(a.member_id)}" for a in alarms) + "]"


def alarms(c):
    me = c.status()
    step("list_alarms", lambda: alarm_line(c.list_alarms()))
    step("create_alarm member 0", lambda: alarm_line(c.create_alarm()))
    step("list_alarms after create", lambda: alarm_line(c.list_alarms()))
    step("list_alarms no space", lambda: alarm_line(c.list_alarms(alarm_type="no space")))
    step("put under NOSPACE", lambda: c.put("al/k", "v"))
    step("txn put under NOSPACE", lambda: txn(c, [], [c.transactions.put("al/k", "v")]))
    step("get under NOSPACE", lambda: c.get("h/k")[0] is not None)
    step("delete under NOSPACE", lambda: c.delete("h/k"))
    step("lease under NOSPACE", lambda: c.lease(5).ttl)
    step("disarm_alarm member 0", lambda: alarm_line(c.disarm_alarm()))
    step("list_alarms after disarm", lambda: alarm_line(c.list_alarms()))
    step("put after disarm", lambda: c.put("al/k", "v").header.revision > 0)
    leader = me.leader
    if leader is not None:
        lid = leader.id
        step("create_alarm leader", lambda: alarm_line(c.create_alarm(member_id=lid), lid))
        step("member active_alarms", lambda: alarm_line(leader.active_alarms, lid))
        step("disarm_alarm other member id", lambda: alarm_line(c.disarm_alarm(member_id=424242), lid))
        step("disarm_alarm leader", lambda: alarm_line(c.disarm_alarm(member_id=lid), lid))
    step("list_alarms at end", lambda: alarm_line(c.list_alarms()))


def token_only(c):
    """grpcio refuses call credentials on a plaintext channel ('Established channel does
    not have a sufficient security level…'), so a python-etcd3 client with user and
    password works only over TLS; it also sends the token as plain metadata, which is what
    is left here."""
    c.call_credentials = None
    c.watcher._credentials = None
    return c


def auth(c):
    stub = rpc.AuthStub(c.channel)

    def call(method, request, token=None):
        md = (("token", token),) if token else None
        return getattr(stub, method)(request, TIMEOUT, metadata=md)

    # python-etcd3 manages no users: they are set up through its generated Auth stub.
    call("UserAdd", rpc.AuthUserAddRequest(name="root", password="rootpw"))
    call("UserGrantRole", rpc.AuthUserGrantRoleRequest(user="root", role="root"))
    call("UserAdd", rpc.AuthUserAddRequest(name="alice", password="alicepw"))
    call("RoleAdd", rpc.AuthRoleAddRequest(name="rw-a"))
    perm = auth_pb2.Permission(permType=auth_pb2.Permission.READWRITE, key=b"a/", range_end=b"a0")
    call("RoleGrantPermission", rpc.AuthRoleGrantPermissionRequest(name="rw-a", perm=perm))
    call("UserGrantRole", rpc.AuthUserGrantRoleRequest(user="alice", role="rw-a"))
    step("auth enable", lambda: type(call("AuthEnable", rpc.AuthEnableRequest())).__name__)
    step("no credentials put", lambda: c.put("a/x", "1"))
    step("no credentials get", lambda: c.get("a/x"))
    step("no credentials status", lambda: c.status().version)
    step("no credentials members", lambda: len(list(c.members)))
    step("no credentials list_alarms", lambda: alarm_line(c.list_alarms()))
    step("no credentials hash", lambda: isinstance(c.hash(), int))
    step("no credentials defragment", lambda: c.defragment())
    step("no credentials lease", lambda: c.lease(5).ttl)
    step("no credentials watch", lambda: c.add_watch_callback("a/nc", Collector()))
    step("no credentials lease refresh", lambda: [r.TTL for r in c.lease(5).refresh()])
    step("no credentials lease info", lambda: (lambda l: c.get_lease_info(l.id).grantedTTL)(c.lease(6)))
    step("no credentials revoke (no keys)", lambda: c.lease(7).revoke())
    step("no credentials compact", lambda: c.compact(1))
    step("no credentials add_member", lambda: c.add_member([f"http://127.0.0.1:{args.spare_port}"]))
    bad = token_only(new_client())
    bad.metadata = (("token", "not-a-token"),)
    bad.watcher._metadata = bad.metadata
    step("bad token put", lambda: bad.put("a/x", "1"))
    step("bad token status", lambda: bad.status().version)
    step("bad token list_alarms", lambda: alarm_line(bad.list_alarms()))
    step("bad token defragment", lambda: bad.defragment())
    step("bad token hash", lambda: bad.hash())
    step("bad token lease", lambda: bad.lease(5))
    step("bad token refresh", lambda: [r.TTL for r in bad.refresh_lease(4242)])
    step("bad token lease info", lambda: bad.get_lease_info(4242).TTL)
    step("bad token compact", lambda: bad.compact(1))
    step("bad token watch", lambda: bad.add_watch_callback("a/bt", Collector()))
    step("bad token snapshot", lambda: bad.snapshot(io.BytesIO()))
    step("bad token remove_member", lambda: bad.remove_member(4242))
    bad.close()
    step("wrong password", lambda: new_client(user="alice", password="nope"))
    step("unknown user", lambda: new_client(user="bob", password="x"))
    step("user without password", lambda: new_client(user="alice"))
    step("alice over plaintext (call credentials)", lambda: new_client(user="alice", password="alicepw").put("a/x", "0"))
    alice = None
    try:
        alice = token_only(new_client(user="alice", password="alicepw"))
        step("alice put a/x", lambda: alice.put("a/x", "1").header.revision > 0)
        step("alice get a/x", lambda: s(alice.get("a/x")[0]))
        step("alice put b/x", lambda: alice.put("b/x", "1"))
        step("alice get_prefix a/", lambda: pairs(alice.get_prefix("a/")))
        step("alice get_all", lambda: pairs(alice.get_all()))
        step("alice txn in range", lambda: txn(alice, [alice.transactions.value("a/x") == "1"], [alice.transactions.put("a/y", "2")]))
        step("alice txn out of range", lambda: txn(alice, [], [alice.transactions.get("b/x")]))
        step("alice delete_prefix a/", lambda: alice.delete_prefix("a/").deleted)

        def alice_watch():
            col = Collector()
            wid = alice.add_watch_callback("a/w", col)
            alice.put("a/w", "seen")
            got = col.take(1)
            alice.cancel_watch(wid)
            return got

        step("alice watch a/w", alice_watch)

        def alice_watch_denied():
            col = Collector()
            try:
                wid = alice.add_watch_callback("b/w", col)
            except Exception as e:
                return f"add: {describe_error(e)}"
            c2 = token_only(new_client(user="root", password="rootpw"))
            try:
                c2.put("b/w", "hidden")
            finally:
                c2.close()
            got = col.quiet(1)
            alice.cancel_watch(wid)
            return f"id={wid} got={got}"

        step("alice watch b/w (no permission)", alice_watch_denied)
        step("alice lease", lambda: alice.lease(5).ttl)
        step("alice lock", lambda: alice.lock("al", ttl=5).acquire(timeout=2))
        step("alice status", lambda: alice.status().version)
        step("alice members", lambda: len(list(alice.members)))
        step("alice compact", lambda: alice.compact(1))
        step("alice defragment", lambda: alice.defragment())
        step("alice hash", lambda: alice.hash())
        step("alice snapshot", lambda: alice.snapshot(io.BytesIO()))
        step("alice remove_member", lambda: alice.remove_member(4242))
        step("alice list_alarms", lambda: alarm_line(alice.list_alarms()))
        step("alice create_alarm", lambda: alarm_line(alice.create_alarm()))
        step("alice put under NOSPACE", lambda: alice.put("a/x", "2"))
        step("alice disarm_alarm", lambda: alarm_line(alice.disarm_alarm()))
    finally:
        if alice is not None:
            alice.close()
    root = token_only(new_client(user="root", password="rootpw"))
    try:
        step("root put b/x", lambda: root.put("b/x", "1").header.revision > 0)
        held = {}

        def root_lease():
            held["l"] = root.lease(30)
            return root.put("b/leased", "1", lease=held["l"]).header.revision > 0

        step("root put b/leased with lease", root_lease)
        if "l" in held:
            lid = held["l"].id
            step("no credentials revoke lease holding b/leased", lambda: c.revoke_lease(lid))
            alice2 = token_only(new_client(user="alice", password="alicepw"))
            step("alice revoke lease holding b/leased", lambda: alice2.revoke_lease(lid))
            step("alice put a/z on that lease", lambda: alice2.put("a/z", "1", lease=lid))
            alice2.close()
            step("root revoke", lambda: root.revoke_lease(lid))
        step("root get_all count", lambda: root.get_all_response().count > 0)
        step("root status", lambda: root.status().version)
        step("auth disable", lambda: type(rpc.AuthStub(root.channel).AuthDisable(rpc.AuthDisableRequest(), TIMEOUT, metadata=root.metadata)).__name__)
    finally:
        root.close()
    step("no credentials put after disable", lambda: c.put("a/x", "2").header.revision > 0)


def members(c, n):
    listed = sorted(c.members, key=lambda m: m.name)
    for m in listed:
        member_names[m.id] = m.name
    step("members", lambda: [f"{m.name} peers={[ports(u) for u in m.peer_urls]} clients={[ports(u) for u in m.client_urls]}" for m in listed])
    step("member ids distinct", lambda: len({m.id for m in listed}) == len(listed))
    step("add_member existing peer url", lambda: c.add_member(list(listed[0].peer_urls)))
    step("add_member bad url", lambda: c.add_member(["not a url"]))
    step("add_member no urls", lambda: c.add_member([]))
    step("remove_member unknown", lambda: c.remove_member(4242))
    step("update_member unknown", lambda: c.update_member(4242, [f"http://127.0.0.1:{args.spare_port}"]))
    step("update_member to an existing url", lambda: c.update_member(listed[0].id, list(listed[-1].peer_urls)) if n > 1 else "n/a")
    added = {}

    def add():
        m = c.add_member([f"http://127.0.0.1:{args.spare_port}"])
        added["m"] = m
        member_names[m.id] = "new"
        return f"name={m.name!r} peers={m.peer_urls} clients={list(m.client_urls)}"

    step("add_member", add)
    step("members after add", lambda: sorted(f"{member_name(m.id)} name={m.name!r} peers={[u if member_name(m.id) == 'new' else ports(u) for u in m.peer_urls]} started={bool(m.client_urls)}" for m in c.members))
    if "m" not in added:
        return
    if n == 1:
        # Two voters, one of them never started: no quorum from here on.
        out("single member", "stopping after add_member (no quorum)")
        return
    new = added["m"]
    step("update_member new", lambda: new.update([f"http://127.0.0.1:{args.spare_port + 1}"]))
    step("members after update", lambda: sorted(f"{member_name(m.id)} peers={m.peer_urls}" for m in c.members if member_name(m.id) == "new"))
    step("remove_member new", lambda: new.remove())
    step("remove_member new again", lambda: new.remove())
    step("members after remove", lambda: sorted(member_name(m.id) for m in c.members))
    step("put after membership changes", lambda: c.put("m/k", "v").header.revision > 0)


def tls():
    ca, cert, key = args.tls.split(",")
    host = args.host

    def use(**kw):
        c = etcd3.client(host=host, port=args.port, timeout=5, **kw)
        try:
            c.put("tls/k", "v")
            return f"{s(c.get('tls/k')[0])} secure={c.uses_secure_channel}"
        finally:
            c.close()

    step("tls ca + client cert", lambda: use(ca_cert=ca, cert_cert=cert, cert_key=key))
    step("tls ca only (client cert required)", lambda: use(ca_cert=ca))
    step("tls cert without key", lambda: use(ca_cert=ca, cert_cert=cert))
    step("tls client cert as ca (wrong ca)", lambda: use(ca_cert=cert, cert_cert=cert, cert_key=key))
    step("plaintext to tls port", lambda: use())

    def watch_tls():
        c = etcd3.client(host=host, port=args.port, timeout=5, ca_cert=ca, cert_cert=cert, cert_key=key)
        try:
            col = Collector()
            wid = c.add_watch_callback("tls/w", col)
            c.put("tls/w", "1")
            got = col.take(1)
            c.cancel_watch(wid)
            lease = c.lease(5)
            return f"{got} refresh={[r.TTL for r in lease.refresh()]}"
        finally:
            c.close()

    step("tls watch + lease keepalive", watch_tls)

    # Auth over TLS: grpcio sends call credentials on a secure channel, so user/password
    # clients work as documented; a client certificate's Common Name ("root" here) is the
    # user of a call without a token (etcd's --client-cert-auth).
    full = dict(ca_cert=ca, cert_cert=cert, cert_key=key)
    admin = etcd3.client(host=host, port=args.port, timeout=5, **full)
    stub = rpc.AuthStub(admin.channel)
    stub.UserAdd(rpc.AuthUserAddRequest(name="root", password="rootpw"), TIMEOUT)
    stub.UserGrantRole(rpc.AuthUserGrantRoleRequest(user="root", role="root"), TIMEOUT)
    stub.UserAdd(rpc.AuthUserAddRequest(name="alice", password="alicepw"), TIMEOUT)
    stub.RoleAdd(rpc.AuthRoleAddRequest(name="rw-a"), TIMEOUT)
    perm = auth_pb2.Permission(permType=auth_pb2.Permission.READWRITE, key=b"a/", range_end=b"a0")
    stub.RoleGrantPermission(rpc.AuthRoleGrantPermissionRequest(name="rw-a", perm=perm), TIMEOUT)
    stub.UserGrantRole(rpc.AuthUserGrantRoleRequest(user="alice", role="rw-a"), TIMEOUT)
    step("tls auth enable", lambda: type(stub.AuthEnable(rpc.AuthEnableRequest(), TIMEOUT)).__name__)
    step("tls cert CN root put b/x", lambda: admin.put("b/x", "1").header.revision > 0)
    step("tls cert CN root defragment", lambda: admin.defragment())
    try:
        alice = etcd3.client(host=host, port=args.port, timeout=5, user="alice", password="alicepw", **full)
    except Exception as e:
        out("tls alice client", describe_error(e))
        alice = None
    if alice is not None:
        step("tls alice put a/x", lambda: alice.put("a/x", "1").header.revision > 0)
        step("tls alice put b/x", lambda: alice.put("b/x", "2"))
        step("tls alice get b/x", lambda: alice.get("b/x"))
        step("tls alice defragment", lambda: alice.defragment())

        def alice_watch():
            col = Collector()
            wid = alice.add_watch_prefix_callback("a/", col)
            alice.put("a/w", "seen")
            got = col.take(1)
            alice.cancel_watch(wid)
            return got

        step("tls alice watch_prefix a/", alice_watch)
        step("tls alice lock", lambda: alice.lock("x", ttl=5).acquire(timeout=0))
        alice.close()
    step("tls wrong password", lambda: etcd3.client(host=host, port=args.port, timeout=5, user="alice", password="x", **full))
    step("tls auth disable", lambda: type(stub.AuthDisable(rpc.AuthDisableRequest(), TIMEOUT)).__name__)
    step("tls put after disable", lambda: admin.put("b/y", "1").header.revision > 0)
    admin.close()


def wait_ready(seconds, **kw):
    """Until a read through the log answers (a cluster has a leader): servers just started."""
    deadline = time.time() + seconds
    while True:
        c = etcd3.client(host=args.host, port=args.port, timeout=2, **kw)
        try:
            c.get_response("probe")
            return
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
        finally:
            c.close()


def main():
    global args, base
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--members", type=int, default=1)
    p.add_argument("--spare-port", type=int, default=23999, help="peer port for add_member/update_member (nothing listens)")
    p.add_argument("--tls", help="CA,CERT,KEY: run the TLS section only")
    p.add_argument("--only", help="comma-separated sections to run (default: all)")
    p.add_argument("--wait", type=float, default=0, help="seconds to wait for the server to answer first")
    args = p.parse_args()
    print(f"# python-etcd3 {etcd3.__version__} grpcio {grpc.__version__}", flush=True)
    if args.wait:
        ca_cert, cert_cert, cert_key = args.tls.split(",") if args.tls else (None, None, None)
        wait_ready(args.wait, **({"ca_cert": ca_cert, "cert_cert": cert_cert, "cert_key": cert_key} if args.tls else {}))
    if args.tls:
        tls()
        return
    c = new_client()
    base = c.get_response("probe").header.revision
    sections = [
        ("kv", lambda: kv(c)), ("txn", lambda: txns(c)), ("lease", lambda: leases(c)),
        ("watch", lambda: watches(c)), ("compact", lambda: compaction(c)), ("lock", lambda: locks(c)),
        ("maintenance", lambda: maintenance(c)), ("alarm", lambda: alarms(c)), ("auth", lambda: auth(c)),
        ("members", lambda: members(c, args.members)),
    ]
    only = set(args.only.split(",")) if args.only else None
    # Member names are needed by alarms and status before the members section lists them.
    for m in c.members:
        member_names[m.id] = m.name
    for name, run in sections:
        if only and name not in only:
            continue
        print(f"## {name}", flush=True)
        t = time.time()
        try:
            run()
        except Exception as e:
            out(f"{name} section aborted", describe_error(e))
        print(f"# {name} took {time.time() - t:.1f}s", file=sys.stderr, flush=True)
    c.close()


if __name__ == "__main__":
    main()
