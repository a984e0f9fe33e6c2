// Command scenario drives etcd's own Go clients (clientv3 and its concurrency,
// namespace, leasing, ordering and mirror packages, and the v2 client) against a
// list of client URLs and prints one normalized line per step, so that a run
// against etcd 3.4.23 and one against kvctl can be diffed line by line.
//
// Normalization: member, lease and cluster ids are never printed (only whether
// they are set and how they relate); revisions are printed relative to the
// revision seen at the start; TTLs are printed as ranges; v2 indexes relative to
// the index of the first v2 write.
//
// It expects a fresh cluster (run.sh starts one) because it enables and disables
// auth and adds and removes members.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	v2 "go.etcd.io/etcd/client"
	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
	"go.etcd.io/etcd/clientv3/leasing"
	"go.etcd.io/etcd/clientv3/mirror"
	"go.etcd.io/etcd/clientv3/namespace"
	"go.etcd.io/etcd/clientv3/ordering"
	"go.etcd.io/etcd/etcdserver/api/v3rpc/rpctypes"
	pb "go.etcd.io/etcd/etcdserver/etcdserverpb"
	"go.etcd.io/etcd/mvcc/mvccpb"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var (
	endpoints []string
	base      int64 // revision at the start of the run
	cli       *clientv3.Client
	cli1      *clientv3.Client // first endpoint only (serializable reads, per-member calls)
	spareURL  string           // a peer URL no member listens on (member add)
	only      string           // run only sections whose name contains this
	failures  int
)

func out(step string, format string, args ...interface{}) {
	fmt.Printf("%-28s %s\n", step, fmt.Sprintf(format, args...))
}

// rel prints a revision relative to the start of the run ("-" for zero).
func rel(rev int64) string {
	if rev == 0 {
		return "0"
	}
	return fmt.Sprintf("+%d", rev-base)
}

// errs normalizes an error to its gRPC code and message (or the plain text).
func errs(err error) string {
	if err == nil {
		return "ok"
	}
	if err == context.DeadlineExceeded {
		return "TIMEOUT"
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return fmt.Sprintf("err(%s: %s)", s.Code(), s.Message())
	}
	if ev := rpctypes.ErrorDesc(err); ev != "" {
		return fmt.Sprintf("err(%s)", ev)
	}
	return fmt.Sprintf("err(%s)", err.Error())
}

func ctxT(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func kvs(list []*mvccpb.KeyValue) string {
	parts := make([]string, 0, len(list))
	for _, kv := range list {
		lease := ""
		if kv.Lease != 0 {
			lease = ",lease"
		}
		parts = append(parts, fmt.Sprintf("%s=%q(c%s,m%s,v%d%s)", kv.Key, kv.Value, rel(kv.CreateRevision), rel(kv.ModRevision), kv.Version, lease))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func getLine(step string, resp *clientv3.GetResponse, err error) {
	if err != nil {
		out(step, "%s", errs(err))
		return
	}
	out(step, "count=%d more=%v kvs=%s", resp.Count, resp.More, kvs(resp.Kvs))
}

// spare returns a peer URL n ports above the spare one (nothing listens there either).
func spare(n int) string {
	i := strings.LastIndex(spareURL, ":")
	var port int
	fmt.Sscanf(spareURL[i+1:], "%d", &port)
	return fmt.Sprintf("%s:%d", spareURL[:i], port+n)
}

func must(step string, err error) bool {
	if err != nil {
		failures++
		out(step, "FAILED %s", errs(err))
		return false
	}
	return true
}

// the client's own retry warnings would interleave with the lines to compare
var quiet = zap.Config{
	Level:            zap.NewAtomicLevelAt(zap.ErrorLevel),
	Encoding:         "json",
	EncoderConfig:    zap.NewProductionEncoderConfig(),
	OutputPaths:      []string{"stderr"},
	ErrorOutputPaths: []string{"stderr"},
}

func newClient(eps []string, user, pass string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   eps,
		DialTimeout: 5 * time.Second,
		LogConfig:   &quiet,
		Username:    user,
		Password:    pass,
	})
}

func main() {
	var eps string
	flag.StringVar(&eps, "endpoints", "http://127.0.0.1:2379", "comma-separated client URLs")
	flag.StringVar(&spareURL, "spare-peer-url", "http://127.0.0.1:2390", "peer URL for a member that is added and removed again (nothing listens there)")
	flag.StringVar(&only, "only", "", "run only the sections whose name contains this")
	probe := flag.Bool("require-leader-probe", false, "watch with WithRequireLeader on the first endpoint, print a ready line, and report what happens when the others stop (run.sh stops them)")
	authProbe := flag.Bool("auth-revoke-probe", false, "with 3 or more members: a permission revoked through the first, then a write through the last, 30 times")
	flag.Parse()
	endpoints = strings.Split(eps, ",")
	if *authProbe {
		authRevokeProbe()
		return
	}
	if *probe {
		requireLeaderProbe()
		return
	}

	var err error
	cli, err = newClient(endpoints, "", "")
	if err != nil {
		fmt.Println("connect:", err)
		os.Exit(2)
	}
	defer cli.Close()
	cli1, err = newClient(endpoints[:1], "", "")
	if err != nil {
		fmt.Println("connect:", err)
		os.Exit(2)
	}
	defer cli1.Close()
	ctx, cancel := ctxT(10 * time.Second)
	r, err := cli.Get(ctx, "scenario-start")
	cancel()
	if err != nil {
		fmt.Println("first get:", err)
		os.Exit(2)
	}
	base = r.Header.Revision
	out("start", "members=%d", len(endpoints))

	sections := []struct {
		name string
		fn   func()
	}{
		{"kv", kvSection},
		{"txn", txnSection},
		{"watch", watchSection},
		{"lease", leaseSection},
		{"mutex", mutexSection},
		{"election", electionSection},
		{"stm", stmSection},
		{"namespace", namespaceSection},
		{"leasing", leasingSection},
		{"ordering", orderingSection},
		{"mirror", mirrorSection},
		{"cluster", clusterSection},
		{"maintenance", maintenanceSection},
		{"auth", authSection},
		{"v2keys", v2KeysSection},
		{"v2watch", v2WatchSection},
		{"v2members", v2MembersSection},
		{"v2auth", v2AuthSection},
	}
	for _, s := range sections {
		if only != "" && !strings.Contains(s.name, only) {
			continue
		}
		// each section's revisions are printed from the revision it starts at, so a
		// section's lines do not depend on how many revisions the ones before it used
		ctx, cancel := ctxT(10 * time.Second)
		r, err := cli.Get(ctx, "section-start")
		cancel()
		if err == nil {
			base = r.Header.Revision
		}
		s.fn()
	}
	out("end", "failures=%d", failures)
}

// ---------------------------------------------------------------- KV

func kvSection() {
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	for i, k := range []string{"kv/a", "kv/b", "kv/c", "kv/d", "kv0"} {
		resp, err := cli.Put(ctx, k, fmt.Sprintf("v%d", i))
		if err != nil {
			out("kv.put", "%s %s", k, errs(err))
			continue
		}
		out("kv.put", "%s rev=%s prev=%v", k, rel(resp.Header.Revision), resp.PrevKv != nil)
	}
	resp, err := cli.Put(ctx, "kv/a", "v0b", clientv3.WithPrevKV())
	if err == nil {
		out("kv.put.prevkv", "rev=%s prev=%s", rel(resp.Header.Revision), kvs([]*mvccpb.KeyValue{resp.PrevKv}))
	} else {
		out("kv.put.prevkv", "%s", errs(err))
	}
	resp, err = cli.Put(ctx, "kv/none", "x", clientv3.WithPrevKV())
	if err == nil {
		out("kv.put.prevkv.new", "prev=%v", resp.PrevKv != nil)
	}
	_, err = cli.Put(ctx, "kv/a", "", clientv3.WithIgnoreValue())
	out("kv.put.ignorevalue", "%s", errs(err))
	g, err := cli.Get(ctx, "kv/a")
	getLine("kv.get.after.ignorevalue", g, err)
	_, err = cli.Put(ctx, "kv/nokey", "", clientv3.WithIgnoreValue())
	out("kv.put.ignorevalue.missing", "%s", errs(err))
	_, err = cli.Put(ctx, "kv/b", "vb2", clientv3.WithIgnoreLease())
	out("kv.put.ignorelease", "%s", errs(err))
	_, err = cli.Put(ctx, "", "x")
	out("kv.put.emptykey", "%s", errs(err))

	g, err = cli.Get(ctx, "kv/a")
	getLine("kv.get", g, err)
	g, err = cli.Get(ctx, "kv/zz")
	getLine("kv.get.missing", g, err)
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix())
	getLine("kv.get.prefix", g, err)
	g, err = cli.Get(ctx, "kv/b", clientv3.WithRange("kv/d"))
	getLine("kv.get.range", g, err)
	g, err = cli.Get(ctx, "kv/c", clientv3.WithFromKey())
	getLine("kv.get.fromkey", g, err)
	g, err = cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithKeysOnly())
	if err == nil {
		n := 0
		for _, kv := range g.Kvs {
			if strings.HasPrefix(string(kv.Key), "kv") {
				n++
			}
		}
		out("kv.get.all", "kv-keys=%d", n)
	} else {
		out("kv.get.all", "%s", errs(err))
	}
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithLimit(2))
	getLine("kv.get.limit", g, err)
	for _, s := range []struct {
		name   string
		target clientv3.SortTarget
		order  clientv3.SortOrder
	}{
		{"key.desc", clientv3.SortByKey, clientv3.SortDescend},
		{"key.asc", clientv3.SortByKey, clientv3.SortAscend},
		{"version.desc", clientv3.SortByVersion, clientv3.SortDescend},
		{"create.desc", clientv3.SortByCreateRevision, clientv3.SortDescend},
		{"mod.asc", clientv3.SortByModRevision, clientv3.SortAscend},
		{"mod.desc", clientv3.SortByModRevision, clientv3.SortDescend},
		{"value.desc", clientv3.SortByValue, clientv3.SortDescend},
		{"value.none", clientv3.SortByValue, clientv3.SortNone},
	} {
		g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithSort(s.target, s.order))
		getLine("kv.get.sort."+s.name, g, err)
	}
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(2))
	getLine("kv.get.sort.limit", g, err)
	g, err = cli.Get(ctx, "kv/", append(clientv3.WithLastCreate(), clientv3.WithPrefix())...)
	getLine("kv.get.lastcreate", g, err)
	g, err = cli.Get(ctx, "kv/a", clientv3.WithRev(base+1))
	getLine("kv.get.rev", g, err)
	g, err = cli.Get(ctx, "kv/a", clientv3.WithRev(base+1000))
	getLine("kv.get.rev.future", g, err)
	// serializable on one member, after a linearizable read there made it current
	_, _ = cli1.Get(ctx, "kv/a")
	g, err = cli1.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithSerializable())
	getLine("kv.get.serializable", g, err)
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	getLine("kv.get.keysonly", g, err)
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	getLine("kv.get.countonly", g, err)
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithLimit(1))
	getLine("kv.get.countonly.limit", g, err)
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithMinModRev(base+3))
	getLine("kv.get.minmod", g, err)
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithMaxModRev(base+3))
	getLine("kv.get.maxmod", g, err)
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithMinCreateRev(base+2))
	getLine("kv.get.mincreate", g, err)
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithMaxCreateRev(base+2))
	getLine("kv.get.maxcreate", g, err)
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithMinModRev(base+2), clientv3.WithMaxModRev(base+6), clientv3.WithLimit(2))
	getLine("kv.get.minmax.limit", g, err)

	d, err := cli.Delete(ctx, "kv/d", clientv3.WithPrevKV())
	if err == nil {
		out("kv.delete.prevkv", "deleted=%d prev=%s", d.Deleted, kvs(d.PrevKvs))
	} else {
		out("kv.delete.prevkv", "%s", errs(err))
	}
	d, err = cli.Delete(ctx, "kv/zz")
	if err == nil {
		out("kv.delete.missing", "deleted=%d rev=%s", d.Deleted, rel(d.Header.Revision))
	}
	d, err = cli.Delete(ctx, "kv/", clientv3.WithPrefix())
	if err == nil {
		out("kv.delete.prefix", "deleted=%d rev=%s", d.Deleted, rel(d.Header.Revision))
	} else {
		out("kv.delete.prefix", "%s", errs(err))
	}
	d, err = cli.Delete(ctx, "kv0", clientv3.WithFromKey())
	if err == nil {
		out("kv.delete.fromkey", "deleted>=1 %v", d.Deleted >= 1)
	} else {
		out("kv.delete.fromkey", "%s", errs(err))
	}
	// a get at a revision before the deletes still sees the keys
	g, err = cli.Get(ctx, "kv/", clientv3.WithPrefix(), clientv3.WithRev(base+9), clientv3.WithCountOnly())
	getLine("kv.get.rev.history", g, err)

	// compaction: reading below the compacted revision fails
	cur, _ := cli.Get(ctx, "x")
	c, err := cli.Compact(ctx, base+5)
	if err == nil {
		out("kv.compact", "ok rev=%s", rel(c.Header.Revision))
	} else {
		out("kv.compact", "%s", errs(err))
	}
	_, err = cli.Compact(ctx, base+5)
	out("kv.compact.again", "%s", errs(err))
	_, err = cli.Compact(ctx, cur.Header.Revision+100)
	out("kv.compact.future", "%s", errs(err))
	g, err = cli.Get(ctx, "kv/a", clientv3.WithRev(base+2))
	getLine("kv.get.compacted", g, err)
	_, err = cli.Compact(ctx, base+6, clientv3.WithCompactPhysical())
	out("kv.compact.physical", "%s", errs(err))

	// KV.Do with every op type
	dr, err := cli.Do(ctx, clientv3.OpPut("kv/do", "1"))
	out("kv.do.put", "%s put=%v", errs(err), dr.Put() != nil)
	dr, err = cli.Do(ctx, clientv3.OpGet("kv/do"))
	if err == nil {
		getLine("kv.do.get", dr.Get(), nil)
	}
	dr, err = cli.Do(ctx, clientv3.OpDelete("kv/do"))
	if err == nil {
		out("kv.do.delete", "deleted=%d", dr.Del().Deleted)
	}
	// a big value (1 MiB) round trips
	big := strings.Repeat("x", 1<<20)
	_, err = cli.Put(ctx, "kv/big", big)
	out("kv.put.1MiB", "%s", errs(err))
	g, err = cli.Get(ctx, "kv/big")
	if err == nil && len(g.Kvs) == 1 {
		out("kv.get.1MiB", "len=%d", len(g.Kvs[0].Value))
	} else {
		out("kv.get.1MiB", "%s", errs(err))
	}
	_, err = cli.Put(ctx, "kv/toobig", strings.Repeat("x", 2<<20))
	out("kv.put.2MiB", "%s", errs(err))
	_, _ = cli.Delete(ctx, "kv/big")
}

// ---------------------------------------------------------------- Txn

func txnSection() {
	ctx, cancel := ctxT(20 * time.Second)
	defer cancel()
	l, err := cli.Grant(ctx, 60)
	if !must("txn.grant", err) {
		return
	}
	_, _ = cli.Put(ctx, "txn/a", "1")
	_, _ = cli.Put(ctx, "txn/b", "2", clientv3.WithLease(l.ID))
	_, _ = cli.Put(ctx, "txn/a", "3")
	a, _ := cli.Get(ctx, "txn/a")
	kva := a.Kvs[0]

	show := func(step string, r *clientv3.TxnResponse, err error) {
		if err != nil {
			out(step, "%s", errs(err))
			return
		}
		out(step, "succeeded=%v rev=%s responses=%s", r.Succeeded, rel(r.Header.Revision), txnResps(r))
	}
	cases := []struct {
		name string
		cmp  clientv3.Cmp
	}{
		{"value.eq", clientv3.Compare(clientv3.Value("txn/a"), "=", "3")},
		{"value.ne", clientv3.Compare(clientv3.Value("txn/a"), "!=", "3")},
		{"value.gt", clientv3.Compare(clientv3.Value("txn/a"), ">", "2")},
		{"value.lt", clientv3.Compare(clientv3.Value("txn/a"), "<", "2")},
		{"value.missing", clientv3.Compare(clientv3.Value("txn/zz"), "=", "")},
		{"version.eq", clientv3.Compare(clientv3.Version("txn/a"), "=", 2)},
		{"version.missing", clientv3.Compare(clientv3.Version("txn/zz"), "=", 0)},
		{"create.eq", clientv3.Compare(clientv3.CreateRevision("txn/a"), "=", kva.CreateRevision)},
		{"create.missing", clientv3.Compare(clientv3.CreateRevision("txn/zz"), "=", 0)},
		{"mod.gt", clientv3.Compare(clientv3.ModRevision("txn/a"), ">", kva.CreateRevision)},
		{"mod.lt", clientv3.Compare(clientv3.ModRevision("txn/a"), "<", kva.ModRevision)},
		{"lease.eq", clientv3.Compare(clientv3.LeaseValue("txn/b"), "=", l.ID)},
		{"lease.none", clientv3.Compare(clientv3.LeaseValue("txn/a"), "=", clientv3.NoLease)},
		{"lease.missing", clientv3.Compare(clientv3.LeaseValue("txn/zz"), "=", clientv3.NoLease)},
		{"prefix.version.gt", clientv3.Compare(clientv3.Version("txn/"), ">", 0).WithPrefix()},
		{"prefix.value.eq", clientv3.Compare(clientv3.Value("txn/"), "=", "3").WithPrefix()},
		{"range.create.gt", clientv3.Compare(clientv3.CreateRevision("txn/a"), ">", 0).WithRange("txn/c")},
	}
	for _, c := range cases {
		r, err := cli.Txn(ctx).If(c.cmp).Then(clientv3.OpGet("txn/a")).Else(clientv3.OpGet("txn/b")).Commit()
		show("txn.cmp."+c.name, r, err)
	}
	// several compares: all must hold
	r, err := cli.Txn(ctx).If(
		clientv3.Compare(clientv3.Value("txn/a"), "=", "3"),
		clientv3.Compare(clientv3.Version("txn/b"), "=", 1),
	).Then(clientv3.OpPut("txn/c", "then"), clientv3.OpGet("txn/", clientv3.WithPrefix())).
		Else(clientv3.OpPut("txn/c", "else")).Commit()
	show("txn.multi", r, err)
	// nested: a txn inside then, and inside that one's else
	inner2 := clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.Value("txn/c"), "=", "nope")},
		[]clientv3.Op{clientv3.OpPut("txn/d", "inner2-then")},
		[]clientv3.Op{clientv3.OpPut("txn/d", "inner2-else"), clientv3.OpGet("txn/d")},
	)
	inner := clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.Value("txn/c"), "=", "then")},
		[]clientv3.Op{clientv3.OpDelete("txn/b", clientv3.WithPrevKV()), inner2},
		[]clientv3.Op{clientv3.OpPut("txn/d", "inner-else")},
	)
	r, err = cli.Txn(ctx).If(clientv3.Compare(clientv3.Version("txn/a"), ">", 0)).Then(inner, clientv3.OpGet("txn/", clientv3.WithPrefix(), clientv3.WithCountOnly())).Commit()
	show("txn.nested", r, err)
	// a write in then and a read of it in the same txn
	r, err = cli.Txn(ctx).Then(clientv3.OpPut("txn/e", "1"), clientv3.OpGet("txn/e")).Commit()
	show("txn.readyourwrite", r, err)
	// empty txn: served by the member that gets it without a ReadIndex round (etcd's
	// isTxnSerializable holds for it), so asked where a linearizable read just caught up
	_, _ = cli1.Get(ctx, "txn/a")
	r, err = cli1.Txn(ctx).Commit()
	show("txn.empty", r, err)
	// the same key twice in one txn
	r, err = cli.Txn(ctx).Then(clientv3.OpPut("txn/f", "1"), clientv3.OpPut("txn/f", "2")).Commit()
	show("txn.duplicate", r, err)
	r, err = cli.Txn(ctx).Then(clientv3.OpPut("txn/f", "1"), clientv3.OpDelete("txn/", clientv3.WithPrefix())).Commit()
	show("txn.put.delete.overlap", r, err)
	// too many operations
	ops := make([]clientv3.Op, 129)
	for i := range ops {
		ops[i] = clientv3.OpPut(fmt.Sprintf("txn/many/%d", i), "x")
	}
	r, err = cli.Txn(ctx).Then(ops...).Commit()
	show("txn.toomany", r, err)
	// lease missing in a put inside a txn
	r, err = cli.Txn(ctx).Then(clientv3.OpPut("txn/g", "x", clientv3.WithLease(clientv3.LeaseID(12345)))).Commit()
	show("txn.put.badlease", r, err)
	_, _ = cli.Revoke(ctx, l.ID)
	_, _ = cli.Delete(ctx, "txn/", clientv3.WithPrefix())
}

func txnResps(r *clientv3.TxnResponse) string {
	var parts []string
	for _, op := range r.Responses {
		switch {
		case op.GetResponseRange() != nil:
			g := op.GetResponseRange()
			parts = append(parts, fmt.Sprintf("get(count=%d %s)", g.Count, kvs(g.Kvs)))
		case op.GetResponsePut() != nil:
			parts = append(parts, "put")
		case op.GetResponseDeleteRange() != nil:
			d := op.GetResponseDeleteRange()
			parts = append(parts, fmt.Sprintf("delete(%d %s)", d.Deleted, kvs(d.PrevKvs)))
		case op.GetResponseTxn() != nil:
			t := op.GetResponseTxn()
			parts = append(parts, fmt.Sprintf("txn(%v %s)", t.Succeeded, txnResps((*clientv3.TxnResponse)(t))))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// ---------------------------------------------------------------- Watch

func evs(list []*clientv3.Event) string {
	parts := make([]string, 0, len(list))
	for _, e := range list {
		s := fmt.Sprintf("%s %s=%q m%s", e.Type, e.Kv.Key, e.Kv.Value, rel(e.Kv.ModRevision))
		if e.PrevKv != nil {
			s += fmt.Sprintf(" prev=%q", e.PrevKv.Value)
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// collect reads watch responses until n events arrived or the time is up.
func collect(wch clientv3.WatchChan, n int, d time.Duration) (string, []clientv3.WatchResponse) {
	var got []*clientv3.Event
	var resps []clientv3.WatchResponse
	timer := time.After(d)
	for len(got) < n {
		select {
		case wr, ok := <-wch:
			if !ok {
				return evs(got) + " closed", resps
			}
			resps = append(resps, wr)
			if err := wr.Err(); err != nil {
				return evs(got) + " " + errs(err), resps
			}
			got = append(got, wr.Events...)
		case <-timer:
			return evs(got) + " (timeout)", resps
		}
	}
	return evs(got), resps
}

func watchSection() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pctx, pcancel := ctxT(120 * time.Second)
	defer pcancel()

	w := clientv3.NewWatcher(cli)
	defer w.Close()
	wch := w.Watch(ctx, "w/", clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithCreatedNotify())
	first := <-wch
	out("watch.created", "created=%v events=%d", first.Created, len(first.Events))
	_, _ = cli.Put(pctx, "w/a", "1")
	_, _ = cli.Put(pctx, "w/a", "2")
	_, _ = cli.Delete(pctx, "w/a")
	_, _ = cli.Put(pctx, "wx", "outside")
	s, _ := collect(wch, 3, 5*time.Second)
	out("watch.prefix.prevkv", "%s", s)

	// from a past revision
	wch2 := w.Watch(ctx, "w/a", clientv3.WithRev(base+1))
	s, _ = collect(wch2, 3, 5*time.Second)
	out("watch.fromrev", "%s", s)

	// filters
	wnp := w.Watch(ctx, "w/", clientv3.WithPrefix(), clientv3.WithRev(base+1), clientv3.WithFilterPut())
	s, _ = collect(wnp, 1, 5*time.Second)
	out("watch.filter.noput", "%s", s)
	wnd := w.Watch(ctx, "w/", clientv3.WithPrefix(), clientv3.WithRev(base+1), clientv3.WithFilterDelete())
	s, _ = collect(wnd, 2, 5*time.Second)
	out("watch.filter.nodelete", "%s", s)

	// a range watch and a from-key watch
	wr := w.Watch(ctx, "w/b", clientv3.WithRange("w/d"))
	wfk := w.Watch(ctx, "w/c", clientv3.WithFromKey())
	time.Sleep(200 * time.Millisecond)
	for _, k := range []string{"w/a", "w/b", "w/c", "w/d"} {
		_, _ = cli.Put(pctx, k, "r")
	}
	s, _ = collect(wr, 2, 5*time.Second)
	out("watch.range", "%s", s)
	s, _ = collect(wfk, 2, 5*time.Second)
	out("watch.fromkey", "%s", s)

	// progress: an idle watcher with progress notify gets a progress response on request
	wp := w.Watch(ctx, "w/idle", clientv3.WithProgressNotify())
	time.Sleep(300 * time.Millisecond)
	err := w.RequestProgress(pctx)
	out("watch.requestprogress", "%s", errs(err))
	select {
	case pr := <-wp:
		out("watch.progress", "progress=%v events=%d rev=%s", pr.IsProgressNotify(), len(pr.Events), rel(pr.Header.Revision))
	case <-time.After(5 * time.Second):
		out("watch.progress", "(timeout)")
	}

	// require leader
	lctx := clientv3.WithRequireLeader(ctx)
	wl := w.Watch(lctx, "w/leader")
	time.Sleep(200 * time.Millisecond)
	_, _ = cli.Put(pctx, "w/leader", "x")
	s, _ = collect(wl, 1, 5*time.Second)
	out("watch.requireleader", "%s", s)

	// fragment: three puts of 700 KB, watched from before them: the catch-up sends
	// them in one response (2.1 MB, more than the 1.5 MiB request limit), which the
	// server splits when the watcher asked for fragments
	v := strings.Repeat("f", 700*1024)
	var fragRev int64
	for i := 1; i <= 3; i++ {
		pr, err := cli.Put(pctx, fmt.Sprintf("w/frag/%d", i), v)
		out("watch.fragment.put", "%s", errs(err))
		if err == nil && fragRev == 0 {
			fragRev = pr.Header.Revision
		}
	}
	wf := w.Watch(ctx, "w/frag/", clientv3.WithPrefix(), clientv3.WithFragment(), clientv3.WithRev(fragRev))
	wnf := w.Watch(ctx, "w/frag/", clientv3.WithPrefix(), clientv3.WithRev(fragRev))
	for _, c := range []struct {
		name string
		ch   clientv3.WatchChan
	}{{"watch.fragment", wf}, {"watch.nofragment", wnf}} {
		_, resps := collect(c.ch, 3, 10*time.Second)
		var sizes []string
		for _, r := range resps {
			sizes = append(sizes, fmt.Sprintf("%d", len(r.Events)))
		}
		out(c.name, "responses=%d events-per-response=%s", len(resps), strings.Join(sizes, ","))
	}
	_, _ = cli.Delete(pctx, "w/frag/", clientv3.WithPrefix())

	// compacted: a watch from a revision below the compaction fails with the compact revision
	cur, err := cli.Put(pctx, "w/compact", "1")
	if !must("watch.compact.put", err) {
		return
	}
	_, _ = cli.Put(pctx, "w/compact", "2")
	_, err = cli.Compact(pctx, cur.Header.Revision+1)
	out("watch.compact", "%s", errs(err))
	// the watch goes to one member, which a linearizable read there brought past the
	// compaction (each member applies it on its own)
	_, _ = cli1.Get(pctx, "w/compact")
	w1 := clientv3.NewWatcher(cli1)
	defer w1.Close()
	wc := w1.Watch(ctx, "w/compact", clientv3.WithRev(cur.Header.Revision))
	select {
	case cr, ok := <-wc:
		out("watch.compacted", "ok=%v canceled=%v compactrev=%s err=%s", ok, cr.Canceled, rel(cr.CompactRevision), errs(cr.Err()))
	case <-time.After(5 * time.Second):
		out("watch.compacted", "(timeout)")
	}
	// a watch at exactly the compacted revision works
	wc2 := w1.Watch(ctx, "w/compact", clientv3.WithRev(cur.Header.Revision+1))
	s, _ = collect(wc2, 1, 5*time.Second)
	out("watch.atcompact", "%s", s)

	// canceling the context closes the channel
	cctx, ccancel := context.WithCancel(ctx)
	wcc := w.Watch(cctx, "w/cancel")
	time.Sleep(100 * time.Millisecond)
	ccancel()
	closed := false
	deadline := time.After(5 * time.Second)
loop:
	for {
		select {
		case _, ok := <-wcc:
			if !ok {
				closed = true
				break loop
			}
		case <-deadline:
			break loop
		}
	}
	out("watch.cancel", "closed=%v", closed)

	// many watchers on one stream
	var chans []clientv3.WatchChan
	for i := 0; i < 20; i++ {
		chans = append(chans, w.Watch(ctx, fmt.Sprintf("w/many/%d", i%5)))
	}
	time.Sleep(300 * time.Millisecond)
	for i := 0; i < 5; i++ {
		_, _ = cli.Put(pctx, fmt.Sprintf("w/many/%d", i), "x")
	}
	okCount := 0
	for _, ch := range chans {
		s, _ := collect(ch, 1, 5*time.Second)
		if !strings.Contains(s, "timeout") {
			okCount++
		}
	}
	out("watch.many", "watchers-with-event=%d/20", okCount)
	_, _ = cli.Delete(pctx, "w", clientv3.WithPrefix())
}

// ---------------------------------------------------------------- Lease

func ttlRange(ttl, granted int64) string {
	switch {
	case ttl == -1:
		return "-1"
	case ttl <= granted && ttl >= granted-3:
		return fmt.Sprintf("~%d", granted)
	default:
		return fmt.Sprintf("odd(%d of %d)", ttl, granted)
	}
}

func leaseSection() {
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	g, err := cli.Grant(ctx, 30)
	if !must("lease.grant", err) {
		return
	}
	out("lease.grant", "id!=0:%v ttl=%d error=%q", g.ID != 0, g.TTL, g.Error)
	g2, err := cli.Lease.Grant(ctx, 1)
	if err == nil {
		out("lease.grant.min", "ttl-raised=%v", g2.TTL > 1)
		_, _ = cli.Revoke(ctx, g2.ID)
	}
	_, err = cli.Put(ctx, "lease/a", "1", clientv3.WithLease(g.ID))
	out("lease.put", "%s", errs(err))
	_, err = cli.Put(ctx, "lease/b", "2", clientv3.WithLease(g.ID))
	out("lease.put", "%s", errs(err))
	_, err = cli.Put(ctx, "lease/c", "2", clientv3.WithLease(clientv3.LeaseID(424242)))
	out("lease.put.badlease", "%s", errs(err))
	t, err := cli.TimeToLive(ctx, g.ID, clientv3.WithAttachedKeys())
	if err == nil {
		var keys []string
		for _, k := range t.Keys {
			keys = append(keys, string(k))
		}
		sort.Strings(keys)
		out("lease.ttl.keys", "ttl=%s granted=%d keys=%v", ttlRange(t.TTL, 30), t.GrantedTTL, keys)
	} else {
		out("lease.ttl.keys", "%s", errs(err))
	}
	t, err = cli.TimeToLive(ctx, g.ID)
	if err == nil {
		out("lease.ttl", "ttl=%s keys=%d", ttlRange(t.TTL, 30), len(t.Keys))
	}
	ls, err := cli.Leases(ctx)
	if err == nil {
		found := false
		for _, l := range ls.Leases {
			if l.ID == g.ID {
				found = true
			}
		}
		out("lease.list", "contains=%v", found)
	} else {
		out("lease.list", "%s", errs(err))
	}
	ka, err := cli.KeepAliveOnce(ctx, g.ID)
	if err == nil {
		out("lease.keepaliveonce", "ttl=%d same-id=%v", ka.TTL, ka.ID == g.ID)
	} else {
		out("lease.keepaliveonce", "%s", errs(err))
	}
	kctx, kcancel := context.WithCancel(context.Background())
	kch, err := cli.KeepAlive(kctx, g.ID)
	if err == nil {
		select {
		case r := <-kch:
			out("lease.keepalive", "first ttl=%d", r.TTL)
		case <-time.After(5 * time.Second):
			out("lease.keepalive", "(timeout)")
		}
	} else {
		out("lease.keepalive", "%s", errs(err))
	}
	kcancel()
	// a short lease expires and takes its key with it
	sh, err := cli.Grant(ctx, 2)
	if err == nil {
		_, _ = cli.Put(ctx, "lease/short", "x", clientv3.WithLease(sh.ID))
		wch := cli.Watch(ctx, "lease/short", clientv3.WithFilterPut())
		s, _ := collect(wch, 1, 12*time.Second)
		out("lease.expire.event", "%s", s)
		gr, err := cli.Get(ctx, "lease/short")
		getLine("lease.expire.get", gr, err)
		t, err = cli.TimeToLive(ctx, sh.ID)
		if err == nil {
			out("lease.expire.ttl", "ttl=%d", t.TTL)
		} else {
			out("lease.expire.ttl", "%s", errs(err))
		}
	}
	rv, err := cli.Revoke(ctx, g.ID)
	out("lease.revoke", "%s rev-set=%v", errs(err), err == nil && rv.Header.Revision > 0)
	gr, err := cli.Get(ctx, "lease/", clientv3.WithPrefix())
	getLine("lease.revoke.get", gr, err)
	_, err = cli.Revoke(ctx, g.ID)
	out("lease.revoke.again", "%s", errs(err))
	t, err = cli.TimeToLive(ctx, g.ID)
	if err == nil {
		out("lease.ttl.revoked", "ttl=%d", t.TTL)
	} else {
		out("lease.ttl.revoked", "%s", errs(err))
	}
	_, err = cli.KeepAliveOnce(ctx, g.ID)
	out("lease.keepaliveonce.revoked", "%s", errs(err))
	// a lease with a chosen id
	resp, err := clientv3.NewLeaseFromLeaseClient(clientv3.RetryLeaseClient(cli), cli, 5*time.Second).Grant(ctx, 10)
	out("lease.grant.retryclient", "%s", errs(err))
	if err == nil {
		_, _ = cli.Revoke(ctx, resp.ID)
	}
}

// ---------------------------------------------------------------- Mutex

func mutexSection() {
	ctx, cancel := ctxT(60 * time.Second)
	defer cancel()
	const workers, rounds = 4, 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	inside, maxInside, errCount := 0, 0, 0
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
			if err != nil {
				mu.Lock()
				errCount++
				mu.Unlock()
				return
			}
			defer s.Close()
			m := concurrency.NewMutex(s, "mutex/lock")
			for r := 0; r < rounds; r++ {
				if err := m.Lock(ctx); err != nil {
					mu.Lock()
					errCount++
					mu.Unlock()
					return
				}
				mu.Lock()
				inside++
				if inside > maxInside {
					maxInside = inside
				}
				mu.Unlock()
				// unguarded read-modify-write: correct only under the lock
				g, err := cli.Get(ctx, "mutex/counter")
				n := 0
				if err == nil && len(g.Kvs) == 1 {
					fmt.Sscanf(string(g.Kvs[0].Value), "%d", &n)
				}
				// the write is conditional on still owning the lock
				tr, err := cli.Txn(ctx).If(m.IsOwner()).Then(clientv3.OpPut("mutex/counter", fmt.Sprint(n+1))).Commit()
				if err != nil || !tr.Succeeded {
					mu.Lock()
					errCount++
					mu.Unlock()
				}
				mu.Lock()
				inside--
				mu.Unlock()
				if err := m.Unlock(ctx); err != nil {
					mu.Lock()
					errCount++
					mu.Unlock()
				}
			}
		}(i)
	}
	wg.Wait()
	g, err := cli.Get(ctx, "mutex/counter")
	val := ""
	if err == nil && len(g.Kvs) == 1 {
		val = string(g.Kvs[0].Value)
	}
	out("mutex.contention", "counter=%s max-holders=%d errors=%d", val, maxInside, errCount)
	left, _ := cli.Get(ctx, "mutex/lock", clientv3.WithPrefix(), clientv3.WithCountOnly())
	out("mutex.keys.left", "%d", left.Count)

	// a holder that loses its session releases the lock to a waiter
	s1, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if !must("mutex.session", err) {
		return
	}
	s2, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if !must("mutex.session", err) {
		return
	}
	defer s2.Close()
	m1 := concurrency.NewMutex(s1, "mutex/l2")
	m2 := concurrency.NewMutex(s2, "mutex/l2")
	out("mutex.lock1", "%s", errs(m1.Lock(ctx)))
	got := make(chan error, 1)
	go func() { got <- m2.Lock(ctx) }()
	select {
	case <-got:
		out("mutex.lock2.blocked", "false")
	case <-time.After(500 * time.Millisecond):
		out("mutex.lock2.blocked", "true")
	}
	out("mutex.session1.close", "%s", errs(s1.Close()))
	select {
	case err := <-got:
		out("mutex.lock2.acquired", "%s", errs(err))
	case <-time.After(10 * time.Second):
		out("mutex.lock2.acquired", "(timeout)")
	}
	lk := concurrency.NewLocker(s2, "mutex/l3")
	lk.Lock()
	lk.Unlock()
	out("mutex.locker", "ok")
	_ = m2.Unlock(ctx)
	_, _ = cli.Delete(ctx, "mutex/", clientv3.WithPrefix())
}

// ---------------------------------------------------------------- Election

func electionSection() {
	ctx, cancel := ctxT(60 * time.Second)
	defer cancel()
	s1, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if !must("election.session", err) {
		return
	}
	defer s1.Close()
	s2, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if !must("election.session", err) {
		return
	}
	defer s2.Close()
	e1 := concurrency.NewElection(s1, "election/e")
	e2 := concurrency.NewElection(s2, "election/e")
	ob := concurrency.NewElection(s2, "election/e")
	_, err = ob.Leader(ctx)
	out("election.leader.none", "%s", errs(err))
	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	obs := ob.Observe(octx)
	out("election.campaign1", "%s", errs(e1.Campaign(ctx, "one")))
	l, err := e1.Leader(ctx)
	if err == nil {
		out("election.leader", "%s", l.Kvs[0].Value)
	}
	won := make(chan error, 1)
	go func() { won <- e2.Campaign(ctx, "two") }()
	select {
	case <-won:
		out("election.campaign2.blocked", "false")
	case <-time.After(500 * time.Millisecond):
		out("election.campaign2.blocked", "true")
	}
	out("election.proclaim", "%s", errs(e1.Proclaim(ctx, "one-b")))
	out("election.proclaim.notleader", "%s", errs(concurrency.NewElection(s2, "election/e").Proclaim(ctx, "x")))
	out("election.resign", "%s", errs(e1.Resign(ctx)))
	select {
	case err := <-won:
		out("election.campaign2.won", "%s", errs(err))
	case <-time.After(10 * time.Second):
		out("election.campaign2.won", "(timeout)")
	}
	l, err = e2.Leader(ctx)
	if err == nil {
		out("election.leader", "%s", l.Kvs[0].Value)
	}
	var seen []string
	timeout := time.After(5 * time.Second)
obsLoop:
	for len(seen) < 3 {
		select {
		case r, ok := <-obs:
			if !ok {
				break obsLoop
			}
			seen = append(seen, string(r.Kvs[0].Value))
		case <-timeout:
			break obsLoop
		}
	}
	out("election.observe", "%v", seen)
	out("election.resign2", "%s", errs(e2.Resign(ctx)))
	_, err = ob.Leader(ctx)
	out("election.leader.after", "%s", errs(err))
}

// ---------------------------------------------------------------- STM

func stmSection() {
	ctx, cancel := ctxT(60 * time.Second)
	defer cancel()
	levels := []struct {
		name string
		iso  concurrency.Isolation
	}{
		{"serializable-snapshot", concurrency.SerializableSnapshot},
		{"serializable", concurrency.Serializable},
		{"repeatable-reads", concurrency.RepeatableReads},
		{"read-committed", concurrency.ReadCommitted},
	}
	for _, lv := range levels {
		_, _ = cli.Put(ctx, "stm/x", "0")
		_, _ = cli.Put(ctx, "stm/y", "0")
		attempts := 0
		// the apply function reads x, then a conflicting writer changes x (first
		// attempt only), then the STM writes y from x
		_, err := concurrency.NewSTM(cli, func(s concurrency.STM) error {
			attempts++
			x := s.Get("stm/x")
			if attempts == 1 {
				if _, err := cli.Put(ctx, "stm/x", "10"); err != nil {
					return err
				}
			}
			s.Put("stm/y", x+"+1")
			return nil
		}, concurrency.WithIsolation(lv.iso), concurrency.WithAbortContext(ctx))
		y, _ := cli.Get(ctx, "stm/y")
		out("stm."+lv.name+".conflict", "%s attempts=%d y=%s", errs(err), attempts, y.Kvs[0].Value)

		// a conflicting write to a key the STM only writes
		attempts = 0
		_, err = concurrency.NewSTM(cli, func(s concurrency.STM) error {
			attempts++
			_ = s.Get("stm/x")
			if attempts == 1 {
				if _, err := cli.Put(ctx, "stm/y", "other"); err != nil {
					return err
				}
			}
			s.Put("stm/y", "mine")
			return nil
		}, concurrency.WithIsolation(lv.iso))
		y, _ = cli.Get(ctx, "stm/y")
		out("stm."+lv.name+".writeonly", "%s attempts=%d y=%s", errs(err), attempts, y.Kvs[0].Value)

		// bank transfers from several goroutines keep the total
		for i := 0; i < 4; i++ {
			_, _ = cli.Put(ctx, fmt.Sprintf("stm/acct/%d", i), "100")
		}
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 5; i++ {
					from, to := fmt.Sprintf("stm/acct/%d", (w+i)%4), fmt.Sprintf("stm/acct/%d", (w+i+1)%4)
					_, _ = concurrency.NewSTM(cli, func(s concurrency.STM) error {
						var a, b int
						fmt.Sscanf(s.Get(from), "%d", &a)
						fmt.Sscanf(s.Get(to), "%d", &b)
						s.Put(from, fmt.Sprint(a-7))
						s.Put(to, fmt.Sprint(b+7))
						return nil
					}, concurrency.WithIsolation(lv.iso), concurrency.WithPrefetch(from, to))
				}
			}(w)
		}
		wg.Wait()
		total := 0
		g, _ := cli.Get(ctx, "stm/acct/", clientv3.WithPrefix())
		for _, kv := range g.Kvs {
			var n int
			fmt.Sscanf(string(kv.Value), "%d", &n)
			total += n
		}
		if lv.iso == concurrency.ReadCommitted {
			// read committed does not detect conflicts: the total may drift; only say it ran
			out("stm."+lv.name+".bank", "accounts=%d", len(g.Kvs))
		} else {
			out("stm."+lv.name+".bank", "accounts=%d total=%d", len(g.Kvs), total)
		}
		_, _ = cli.Delete(ctx, "stm/", clientv3.WithPrefix())
	}
	// an apply function that fails aborts without writing
	_, err := concurrency.NewSTM(cli, func(s concurrency.STM) error {
		s.Put("stm/never", "x")
		return fmt.Errorf("abort")
	})
	g, _ := cli.Get(ctx, "stm/never")
	out("stm.abort", "%s count=%d", errs(err), g.Count)
	// a read of a missing key and a delete
	_, _ = cli.Put(ctx, "stm/del", "x")
	_, err = concurrency.NewSTM(cli, func(s concurrency.STM) error {
		if s.Get("stm/missing") != "" {
			return fmt.Errorf("missing key read a value")
		}
		s.Del("stm/del")
		return nil
	})
	g, _ = cli.Get(ctx, "stm/del")
	out("stm.delete", "%s count=%d", errs(err), g.Count)
}

// ---------------------------------------------------------------- namespace

func namespaceSection() {
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	nkv := namespace.NewKV(cli.KV, "ns1/")
	nw := namespace.NewWatcher(cli.Watcher, "ns1/")
	nl := namespace.NewLease(cli.Lease, "ns1/")
	// nw is not closed: closing it would close the client's own watcher
	wch := nw.Watch(ctx, "", clientv3.WithPrefix())
	time.Sleep(200 * time.Millisecond)
	_, err := nkv.Put(ctx, "a", "1")
	out("ns.put", "%s", errs(err))
	_, _ = nkv.Put(ctx, "b", "2")
	_, _ = cli.Put(ctx, "other", "o")
	g, err := nkv.Get(ctx, "", clientv3.WithPrefix())
	getLine("ns.get.prefix", g, err)
	g, err = nkv.Get(ctx, "a", clientv3.WithFromKey())
	getLine("ns.get.fromkey", g, err)
	g, err = cli.Get(ctx, "ns1/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	getLine("ns.raw", g, err)
	tr, err := nkv.Txn(ctx).If(clientv3.Compare(clientv3.Value("a"), "=", "1")).
		Then(clientv3.OpGet("b"), clientv3.OpPut("c", "3")).Commit()
	if err == nil {
		out("ns.txn", "succeeded=%v %s", tr.Succeeded, txnResps(tr))
	} else {
		out("ns.txn", "%s", errs(err))
	}
	s, _ := collect(wch, 3, 5*time.Second)
	out("ns.watch", "%s", s)
	l, err := nl.Grant(ctx, 30)
	if err == nil {
		_, _ = nkv.Put(ctx, "leased", "x", clientv3.WithLease(l.ID))
		t, err := nl.TimeToLive(ctx, l.ID, clientv3.WithAttachedKeys())
		if err == nil {
			var ks []string
			for _, k := range t.Keys {
				ks = append(ks, string(k))
			}
			out("ns.lease.keys", "%v", ks)
		} else {
			out("ns.lease.keys", "%s", errs(err))
		}
		_, _ = nl.Revoke(ctx, l.ID)
	}
	d, err := nkv.Delete(ctx, "", clientv3.WithPrefix())
	if err == nil {
		out("ns.delete.prefix", "deleted=%d", d.Deleted)
	}
	g, _ = cli.Get(ctx, "other")
	out("ns.outside.kept", "count=%d", g.Count)
	_, _ = cli.Delete(ctx, "other")
}

// ---------------------------------------------------------------- leasing

func leasingSection() {
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	lkv, closeFn, err := leasing.NewKV(cli, "leasing-pfx/")
	if !must("leasing.new", err) {
		return
	}
	defer closeFn()
	_, err = lkv.Put(ctx, "lk/a", "1")
	out("leasing.put", "%s", errs(err))
	g, err := lkv.Get(ctx, "lk/a")
	getLine("leasing.get", g, err)
	g, err = lkv.Get(ctx, "lk/a")
	getLine("leasing.get.cached", g, err)
	lk, _ := cli.Get(ctx, "leasing-pfx/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	out("leasing.lease.keys", "count=%d", lk.Count)
	// another leasing client changes the key: the first must see the new value
	// (a plain client's write would not revoke the first one's cached lease)
	lkv2, close2, err := leasing.NewKV(cli, "leasing-pfx/")
	if !must("leasing.new2", err) {
		return
	}
	defer close2()
	_, err = lkv2.Put(ctx, "lk/a", "2")
	out("leasing.other.put", "%s", errs(err))
	var v string
	for i := 0; i < 50; i++ {
		g, err = lkv.Get(ctx, "lk/a")
		if err == nil && len(g.Kvs) == 1 && string(g.Kvs[0].Value) == "2" {
			v = "2"
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	out("leasing.get.after.other", "value=%s", v)
	tr, err := lkv.Txn(ctx).If(clientv3.Compare(clientv3.Value("lk/a"), "=", "2")).Then(clientv3.OpPut("lk/b", "3")).Commit()
	if err == nil {
		out("leasing.txn", "succeeded=%v", tr.Succeeded)
	} else {
		out("leasing.txn", "%s", errs(err))
	}
	d, err := lkv.Delete(ctx, "lk/a")
	if err == nil {
		out("leasing.delete", "deleted=%d", d.Deleted)
	} else {
		out("leasing.delete", "%s", errs(err))
	}
	g, err = lkv.Get(ctx, "lk/a")
	getLine("leasing.get.deleted", g, err)
	g, err = lkv.Get(ctx, "lk/", clientv3.WithPrefix())
	getLine("leasing.get.prefix", g, err)
	_, _ = cli.Delete(ctx, "lk/", clientv3.WithPrefix())
}

// ---------------------------------------------------------------- ordering

func orderingSection() {
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	okv := ordering.NewKV(cli.KV, ordering.NewOrderViolationSwitchEndpointClosure(cli))
	_, err := okv.Put(ctx, "ord/a", "1")
	out("ordering.put", "%s", errs(err))
	for i := 0; i < 5; i++ {
		g, err := okv.Get(ctx, "ord/a", clientv3.WithSerializable())
		if err != nil {
			out("ordering.get", "%s", errs(err))
			return
		}
		_ = g
	}
	g, err := okv.Get(ctx, "ord/a")
	getLine("ordering.get", g, err)
	tr, err := okv.Txn(ctx).Then(clientv3.OpGet("ord/a")).Commit()
	if err == nil {
		out("ordering.txn", "%s", txnResps(tr))
	}
	_, _ = cli.Delete(ctx, "ord/", clientv3.WithPrefix())
}

// ---------------------------------------------------------------- mirror

func mirrorSection() {
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	for i := 0; i < 5; i++ {
		_, _ = cli.Put(ctx, fmt.Sprintf("mir/%d", i), fmt.Sprint(i))
	}
	s := mirror.NewSyncer(cli, "mir/", 0)
	rc, errc := s.SyncBase(ctx)
	n := 0
	for r := range rc {
		n += len(r.Kvs)
	}
	err := <-errc
	out("mirror.syncbase", "%s keys=%d", errs(err), n)
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	wch := s.SyncUpdates(wctx)
	_, _ = cli.Put(ctx, "mir/new", "x")
	_, _ = cli.Delete(ctx, "mir/0")
	str, _ := collect(wch, 2, 5*time.Second)
	out("mirror.syncupdates", "%s", str)
	_, _ = cli.Delete(ctx, "mir/", clientv3.WithPrefix())
}

// ---------------------------------------------------------------- Cluster

// syncedMemberList lists the members as one member sees them once a linearizable read
// there caught up: MemberList is served from the member's own applied view, in etcd too.
func syncedMemberList(ctx context.Context) (*clientv3.MemberListResponse, error) {
	if _, err := cli1.Get(ctx, "cluster-sync"); err != nil {
		return nil, err
	}
	return cli1.MemberList(ctx)
}

func clusterSection() {
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	ml, err := cli.MemberList(ctx)
	if !must("cluster.list", err) {
		return
	}
	orig := ml
	var desc []string
	for _, m := range ml.Members {
		desc = append(desc, fmt.Sprintf("%s peers=%v clients=%v learner=%v", m.Name, m.PeerURLs, m.ClientURLs, m.IsLearner))
	}
	sort.Strings(desc)
	out("cluster.list", "n=%d header-cluster-set=%v %s", len(ml.Members), ml.Header.ClusterId != 0, strings.Join(desc, "; "))

	la, err := cli.MemberAddAsLearner(ctx, []string{spareURL})
	if err == nil {
		out("cluster.add.learner", "ok learner=%v name=%q peers=%v members=%d", la.Member.IsLearner, la.Member.Name, la.Member.PeerURLs, len(la.Members))
		if ml, err = syncedMemberList(ctx); err != nil {
			out("cluster.list.learners", "%s", errs(err))
			return
		}
		learners := 0
		for _, m := range ml.Members {
			if m.IsLearner {
				learners++
			}
		}
		out("cluster.list.learners", "%d", learners)
		_, err = cli.MemberAddAsLearner(ctx, []string{spareURL})
		// etcd derives a new member's id from its peer URLs and the second it is added:
		// a second add in the same second has the same id (ErrMemberExist), a later one
		// not (ErrPeerURLExist); either refusal is the right one
		if err != nil && (rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrMemberExist) || rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrPeerURLExist)) {
			out("cluster.add.learner.again", "refused (member or peer URL exists)")
		} else {
			out("cluster.add.learner.again", "%s", errs(err))
		}
		_, err = cli.MemberAddAsLearner(ctx, []string{spare(1)})
		out("cluster.add.second.learner", "%s", errs(err))
		if err == nil {
			ml, _ = cli.MemberList(ctx)
			for _, m := range ml.Members {
				if len(m.PeerURLs) == 1 && m.PeerURLs[0] == spare(1) {
					_, _ = cli.MemberRemove(ctx, m.ID)
				}
			}
		}
		_, err = cli.MemberPromote(ctx, la.Member.ID)
		out("cluster.promote.notready", "%s", errs(err))
		_, err = cli.MemberPromote(ctx, ml.Header.MemberId)
		out("cluster.promote.voter", "%s", errs(err))
		_, err = cli.MemberUpdate(ctx, la.Member.ID, []string{spare(2)})
		out("cluster.update.learner", "%s", errs(err))
		if ml, err = syncedMemberList(ctx); err != nil {
			out("cluster.update.learner.list", "%s", errs(err))
			return
		}
		for _, m := range ml.Members {
			if m.ID == la.Member.ID {
				out("cluster.update.learner.list", "peers=%v", m.PeerURLs)
			}
		}
		r, err := cli.MemberRemove(ctx, la.Member.ID)
		if err == nil {
			out("cluster.remove.learner", "ok members=%d", len(r.Members))
		} else {
			out("cluster.remove.learner", "%s", errs(err))
		}
	} else {
		out("cluster.add.learner", "%s", errs(err))
	}
	_, err = cli.MemberRemove(ctx, 0xdeadbeef)
	out("cluster.remove.missing", "%s", errs(err))
	_, err = cli.MemberPromote(ctx, 0xdeadbeef)
	out("cluster.promote.missing", "%s", errs(err))
	_, err = cli.MemberAdd(ctx, []string{orig.Members[0].PeerURLs[0]})
	out("cluster.add.existing.url", "%s", errs(err))
	_, err = cli.MemberAdd(ctx, []string{"not a url"})
	out("cluster.add.bad.url", "%s", errs(err))
	// a voting member that never starts: with three members quorum (3 of 4) still
	// holds; one member would accept it (etcd lets a 1-member cluster grow to 2)
	// and then lose its quorum, so that case is not run
	var a *clientv3.MemberAddResponse
	if len(orig.Members) >= 3 {
		// not the learner's URL: etcd derives the id from the URLs and the second, and the
		// learner's id, removed, may not be used again
		a, err = cli.MemberAdd(ctx, []string{spare(5)})
	} else {
		err = fmt.Errorf("skipped with %d member(s)", len(orig.Members))
	}
	if err == nil {
		out("cluster.add.voter", "ok learner=%v members=%d", a.Member.IsLearner, len(a.Members))
		var r *clientv3.MemberRemoveResponse
		for i := 0; i < 20; i++ {
			r, err = cli.MemberRemove(ctx, a.Member.ID)
			if err == nil {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err == nil {
			out("cluster.remove.voter", "ok members=%d", len(r.Members))
		} else {
			out("cluster.remove.voter", "%s", errs(err))
		}
	} else {
		out("cluster.add.voter", "%s", errs(err))
	}
	// etcd's Raft drops a conf change proposed while the previous one is not applied yet
	// ("ignoring conf change"), and the call times out: leave it time
	time.Sleep(time.Second)
	self := orig.Members[0]
	_, err = cli.MemberUpdate(ctx, self.ID, self.PeerURLs)
	out("cluster.update.self", "%s", errs(err))
}

// ---------------------------------------------------------------- Maintenance

func maintenanceSection() {
	ctx, cancel := ctxT(60 * time.Second)
	defer cancel()
	var leader uint64
	var leaderEP string
	var ids []uint64
	for _, ep := range endpoints {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			out("maint.status", "%s", errs(err))
			continue
		}
		out("maint.status", "version=%s dbsize>0=%v dbinuse>0=%v leader-set=%v learner=%v raftindex>=applied=%v errors=%v",
			st.Version, st.DbSize > 0, st.DbSizeInUse > 0, st.Leader != 0, st.IsLearner, st.RaftIndex >= st.RaftAppliedIndex, st.Errors)
		if st.Leader == st.Header.MemberId {
			leader, leaderEP = st.Leader, ep
		}
		ids = append(ids, st.Header.MemberId)
	}
	bctx, bcancel := ctxT(2 * time.Second)
	_, err := cli.Status(bctx, "http://127.0.0.1:1")
	bcancel()
	out("maint.status.badendpoint", "failed=%v", err != nil)

	// the hash of the key space at a revision: same on every member
	cur, err := cli.Put(ctx, "maint/a", "1")
	if !must("maint.put", err) {
		return
	}
	var hashes []uint32
	for _, ep := range endpoints {
		// HashKV reads the member's own store, in etcd too: wait until it applied the put
		for i := 0; i < 50; i++ {
			if st, err := cli.Status(ctx, ep); err == nil && st.Header.Revision >= cur.Header.Revision {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		h, err := cli.HashKV(ctx, ep, cur.Header.Revision)
		if err != nil {
			out("maint.hashkv", "%s", errs(err))
			continue
		}
		hashes = append(hashes, h.Hash)
		out("maint.hashkv", "hash!=0=%v compact-below-rev=%v", h.Hash != 0, h.CompactRevision < cur.Header.Revision)
	}
	same := true
	for _, h := range hashes {
		if h != hashes[0] {
			same = false
		}
	}
	out("maint.hashkv.same", "%v", same)
	_, err = cli.HashKV(ctx, endpoints[0], cur.Header.Revision+1000)
	out("maint.hashkv.future", "%s", errs(err))

	dir, _ := ioutil.TempDir("", "scenario-snap")
	defer os.RemoveAll(dir)
	rc, err := cli.Snapshot(ctx)
	if err == nil {
		var buf bytes.Buffer
		_, err = buf.ReadFrom(rc)
		rc.Close()
		path := filepath.Join(dir, "snap.db")
		_ = ioutil.WriteFile(path, buf.Bytes(), 0600)
		b := buf.Bytes()
		shaOK := false
		boltOK := false
		if len(b) > 32 {
			sum := sha256.Sum256(b[:len(b)-32])
			shaOK = bytes.Equal(sum[:], b[len(b)-32:])
		}
		if len(b) > 24 {
			boltOK = binary.LittleEndian.Uint32(b[16:20]) == 0xED0CDAED
		}
		st, _ := os.Stat(path)
		out("maint.snapshot", "%s file-size>0=%v sha256-trailer=%v bolt-magic=%v", errs(err), st != nil && st.Size() > 0, shaOK, boltOK)
	} else {
		out("maint.snapshot", "%s", errs(err))
	}

	al, err := cli.AlarmList(ctx)
	if err == nil {
		out("maint.alarm.list", "alarms=%d", len(al.Alarms))
	} else {
		out("maint.alarm.list", "%s", errs(err))
	}
	ad, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{})
	if err == nil {
		out("maint.alarm.disarm", "alarms=%d", len(ad.Alarms))
	} else {
		out("maint.alarm.disarm", "%s", errs(err))
	}
	for _, ep := range endpoints {
		_, err = cli.Defragment(ctx, ep)
		out("maint.defrag", "%s", errs(err))
	}
	g, err := cli.Get(ctx, "maint/a")
	getLine("maint.get.after.defrag", g, err)

	// move leader: to itself, to a missing member, and (3 members) to a follower
	lc, err := newClient([]string{leaderEP}, "", "")
	if err != nil || leader == 0 {
		out("maint.moveleader", "no leader endpoint found")
		return
	}
	defer lc.Close()
	_, err = lc.MoveLeader(ctx, 0xdeadbeef)
	out("maint.moveleader.missing", "%s", errs(err))
	if len(ids) > 1 {
		var target uint64
		var followerEP string
		for i, id := range ids {
			if id != leader {
				target, followerEP = id, endpoints[i]
				break
			}
		}
		_, err = lc.MoveLeader(ctx, target)
		out("maint.moveleader", "%s", errs(err))
		st, err := cli.Status(ctx, followerEP)
		if err == nil {
			out("maint.moveleader.status", "new-leader-is-target=%v", st.Leader == target)
		}
		fc, err := newClient([]string{leaderEP}, "", "")
		if err == nil {
			// the old leader is now a follower and refuses
			_, err = fc.MoveLeader(ctx, leader)
			out("maint.moveleader.notleader", "%s", errs(err))
			fc.Close()
		}
	} else {
		_, err = lc.MoveLeader(ctx, leader)
		out("maint.moveleader.self", "%s", errs(err))
	}
	_, _ = cli.Delete(ctx, "maint/", clientv3.WithPrefix())
}

// ---------------------------------------------------------------- Auth

func authSection() {
	ctx, cancel := ctxT(60 * time.Second)
	defer cancel()
	step := func(name string, err error) { out("auth."+name, "%s", errs(err)) }
	_, err := cli.AuthEnable(ctx)
	step("enable.noroot", err)
	_, err = cli.UserAdd(ctx, "root", "rootpw")
	step("user.add.root", err)
	_, err = cli.UserAdd(ctx, "root", "rootpw")
	step("user.add.again", err)
	_, err = cli.UserAdd(ctx, "", "pw")
	step("user.add.empty", err)
	_, err = cli.AuthEnable(ctx)
	step("enable.norootrole", err)
	_, err = cli.UserGrantRole(ctx, "root", "root")
	step("grant.root", err)
	_, err = cli.RoleAdd(ctx, "rw")
	step("role.add", err)
	_, err = cli.RoleAdd(ctx, "rw")
	step("role.add.again", err)
	_, err = cli.RoleGrantPermission(ctx, "rw", "auth/", clientv3.GetPrefixRangeEnd("auth/"), clientv3.PermissionType(clientv3.PermReadWrite))
	step("role.grant.prefix", err)
	_, err = cli.RoleGrantPermission(ctx, "rw", "ro-key", "", clientv3.PermissionType(clientv3.PermRead))
	step("role.grant.key.read", err)
	_, err = cli.RoleGrantPermission(ctx, "rw", "wo-key", "", clientv3.PermissionType(clientv3.PermWrite))
	step("role.grant.key.write", err)
	_, err = cli.RoleGrantPermission(ctx, "nope", "k", "", clientv3.PermissionType(clientv3.PermRead))
	step("role.grant.missing", err)
	_, err = cli.UserAdd(ctx, "alice", "alicepw")
	step("user.add.alice", err)
	_, err = cli.UserGrantRole(ctx, "alice", "rw")
	step("grant.alice", err)
	_, err = cli.UserGrantRole(ctx, "alice", "nope")
	step("grant.alice.missingrole", err)
	_, err = cli.UserGrantRole(ctx, "bob", "rw")
	step("grant.missinguser", err)
	_, err = cli.AuthEnable(ctx)
	step("enable", err)
	_, err = cli.AuthEnable(ctx)
	step("enable.again", err)

	// the anonymous client is refused once the server notices auth is on
	_, err = cli.Put(ctx, "auth/x", "anon")
	step("anon.put", err)
	_, err = cli.Get(ctx, "auth/x")
	step("anon.get", err)

	_, err = newClient(endpoints, "alice", "wrong")
	step("alice.wrongpw.connect", err)
	_, err = newClient(endpoints, "nobody", "pw")
	step("nobody.connect", err)

	ac, err := newClient(endpoints, "alice", "alicepw")
	if !must("auth.alice.connect", err) {
		return
	}
	defer ac.Close()
	_, err = ac.Put(ctx, "auth/x", "1")
	step("alice.put.allowed", err)
	g, err := ac.Get(ctx, "auth/", clientv3.WithPrefix())
	getLine("auth.alice.get.prefix", g, err)
	_, err = ac.Get(ctx, "auth", clientv3.WithPrefix())
	step("alice.get.wider", err)
	_, err = ac.Put(ctx, "other", "1")
	step("alice.put.denied", err)
	_, err = ac.Get(ctx, "ro-key")
	step("alice.get.readkey", err)
	_, err = ac.Put(ctx, "ro-key", "1")
	step("alice.put.readkey", err)
	_, err = ac.Put(ctx, "wo-key", "1")
	step("alice.put.writekey", err)
	_, err = ac.Get(ctx, "wo-key")
	step("alice.get.writekey", err)
	_, err = ac.Delete(ctx, "auth/", clientv3.WithPrefix())
	step("alice.delete.prefix", err)
	_, err = ac.Txn(ctx).If(clientv3.Compare(clientv3.Value("other"), "=", "x")).Then(clientv3.OpPut("auth/t", "1")).Commit()
	step("alice.txn.cmp.denied", err)
	_, err = ac.Txn(ctx).Then(clientv3.OpPut("auth/t", "1")).Commit()
	step("alice.txn.allowed", err)
	wch := ac.Watch(ctx, "auth/w")
	time.Sleep(200 * time.Millisecond)
	_, _ = ac.Put(ctx, "auth/w", "1")
	s, _ := collect(wch, 1, 5*time.Second)
	out("auth.alice.watch", "%s", s)
	dw := ac.Watch(ctx, "other")
	s, _ = collect(dw, 1, 5*time.Second)
	out("auth.alice.watch.denied", "%s", s)
	_, err = ac.UserList(ctx)
	step("alice.userlist", err)
	_, err = ac.MemberList(ctx)
	step("alice.memberlist", err)
	_, err = ac.Status(ctx, endpoints[0])
	step("alice.status", err)
	_, err = ac.Compact(ctx, 1)
	step("alice.compact", err)
	l, err := ac.Grant(ctx, 30)
	step("alice.lease.grant", err)
	if err == nil {
		_, err = ac.Put(ctx, "auth/leased", "1", clientv3.WithLease(l.ID))
		step("alice.lease.put", err)
		_, err = ac.Revoke(ctx, l.ID)
		step("alice.lease.revoke", err)
	}
	sess, err := concurrency.NewSession(ac, concurrency.WithTTL(10))
	if err == nil {
		m := concurrency.NewMutex(sess, "auth/lock")
		step("alice.mutex.lock", m.Lock(ctx))
		step("alice.mutex.unlock", m.Unlock(ctx))
		sess.Close()
	} else {
		step("alice.session", err)
	}
	authc := pb.NewAuthClient(ac.ActiveConnection())
	ar, err := authc.Authenticate(ctx, &pb.AuthenticateRequest{Name: "alice", Password: "alicepw"})
	if err == nil {
		out("auth.authenticate", "token-set=%v", ar.Token != "")
	} else {
		step("authenticate", err)
	}
	_, err = authc.Authenticate(ctx, &pb.AuthenticateRequest{Name: "alice", Password: "bad"})
	step("authenticate.bad", err)

	rc, err := newClient(endpoints, "root", "rootpw")
	if !must("auth.root.connect", err) {
		return
	}
	defer rc.Close()
	ul, err := rc.UserList(ctx)
	if err == nil {
		out("auth.userlist", "%v", ul.Users)
	} else {
		step("userlist", err)
	}
	rl, err := rc.RoleList(ctx)
	if err == nil {
		out("auth.rolelist", "%v", rl.Roles)
	} else {
		step("rolelist", err)
	}
	ug, err := rc.UserGet(ctx, "alice")
	if err == nil {
		out("auth.userget", "roles=%v", ug.Roles)
	} else {
		step("userget", err)
	}
	_, err = rc.UserGet(ctx, "nobody")
	step("userget.missing", err)
	rg, err := rc.RoleGet(ctx, "rw")
	if err == nil {
		var ps []string
		for _, p := range rg.Perm {
			ps = append(ps, fmt.Sprintf("%v[%q,%q)", clientv3.PermissionType(p.PermType), p.Key, p.RangeEnd))
		}
		out("auth.roleget", "%v", ps)
	} else {
		step("roleget", err)
	}
	rg, err = rc.RoleGet(ctx, "root")
	if err == nil {
		out("auth.roleget.root", "perms=%d", len(rg.Perm))
	} else {
		step("roleget.root", err)
	}
	_, err = rc.RoleRevokePermission(ctx, "rw", "wo-key", "")
	step("role.revoke", err)
	_, err = rc.RoleRevokePermission(ctx, "rw", "never-granted", "")
	step("role.revoke.missing", err)
	_, err = ac.Put(ctx, "wo-key", "2")
	step("alice.put.revoked", err)
	_, err = rc.UserChangePassword(ctx, "alice", "newpw")
	step("user.passwd", err)
	// the old token stays valid (simple tokens are not bound to the password)
	_, err = newClient(endpoints, "alice", "alicepw")
	step("alice.oldpw.connect", err)
	ac2, err := newClient(endpoints, "alice", "newpw")
	step("alice.newpw.connect", err)
	if err == nil {
		ac2.Close()
	}
	_, err = rc.UserRevokeRole(ctx, "alice", "rw")
	step("user.revoke", err)
	_, err = rc.UserRevokeRole(ctx, "alice", "rw")
	step("user.revoke.again", err)
	_, err = ac.Get(ctx, "auth/x")
	step("alice.get.afterrevoke", err)
	_, err = rc.UserRevokeRole(ctx, "root", "root")
	step("user.revoke.rootrole", err)
	_, err = rc.UserDelete(ctx, "root")
	step("user.delete.root", err)
	_, err = rc.RoleDelete(ctx, "root")
	step("role.delete.root", err)
	_, err = rc.RoleDelete(ctx, "rw")
	step("role.delete", err)
	_, err = rc.UserDelete(ctx, "alice")
	step("user.delete", err)
	_, err = rc.UserDelete(ctx, "alice")
	step("user.delete.again", err)
	_, err = cli.AuthDisable(ctx)
	step("anon.disable", err)
	_, err = rc.AuthDisable(ctx)
	step("disable", err)
	_, err = cli.Put(ctx, "auth/x", "anon")
	step("anon.put.afterdisable", err)
	// clean up so the run can end with auth state as it started
	_, _ = cli.UserDelete(ctx, "root")
	_, _ = cli.Delete(ctx, "auth/", clientv3.WithPrefix())
	_, _ = cli.Delete(ctx, "other")
	_, _ = cli.Delete(ctx, "ro-key")
	_, _ = cli.Delete(ctx, "wo-key")
}

// ---------------------------------------------------------------- v2

func v2Client(user, pass string) v2.Client {
	return v2ClientOn(endpoints, user, pass)
}

// v2ClientOn: the v2 client picks one of its endpoints at random and reads from it
// without quorum, so clients that must see each other's writes at once share one member.
func v2ClientOn(eps []string, user, pass string) v2.Client {
	c, err := v2.New(v2.Config{Endpoints: eps, Transport: v2.DefaultTransport, HeaderTimeoutPerRequest: 5 * time.Second, Username: user, Password: pass})
	if err != nil {
		fmt.Println("v2 client:", err)
		os.Exit(2)
	}
	return c
}

var v2base uint64

func rel2(i uint64) string {
	if i == 0 {
		return "0"
	}
	return fmt.Sprintf("+%d", int64(i)-int64(v2base))
}

func node2(n *v2.Node) string {
	if n == nil {
		return "nil"
	}
	s := fmt.Sprintf("%s", n.Key)
	if n.Dir {
		s += "/"
		var kids []string
		for _, k := range n.Nodes {
			kids = append(kids, node2(k))
		}
		s += "{" + strings.Join(kids, " ") + "}"
	} else {
		s += fmt.Sprintf("=%q", n.Value)
	}
	s += fmt.Sprintf("(c%s,m%s", rel2(n.CreatedIndex), rel2(n.ModifiedIndex))
	if n.TTL != 0 {
		ttl := "ttl"
		if n.TTL > 100 || n.TTL < 95 {
			ttl = fmt.Sprintf("ttl=%d", n.TTL)
		}
		s += "," + ttl
		if n.Expiration == nil {
			s += ",no-expiration"
		}
	}
	return s + ")"
}

func resp2(step string, r *v2.Response, err error) {
	if err != nil {
		if e, ok := err.(v2.Error); ok {
			out(step, "error code=%d message=%q cause=%q index-set=%v", e.Code, e.Message, relNums(e.Cause), e.Index != 0)
			return
		}
		out(step, "err(%v)", err)
		return
	}
	if r.Node == nil {
		out(step, "action=%s node=nil index-set=%v cluster-id-set=%v", r.Action, r.Index != 0, r.ClusterID != "")
		return
	}
	out(step, "action=%s node=%s prev=%s index=node-or-later:%v cluster-id-set=%v", r.Action, node2(r.Node), node2(r.PrevNode), r.Index >= r.Node.ModifiedIndex && r.Index != 0, r.ClusterID != "")
}

var numRe = regexp.MustCompile(`[0-9]+`)
var indexRe = regexp.MustCompile(`\[[0-9]+\]$`)

// relNums rewrites the v2 indexes in an error cause ("[1 != 6]") relative to v2base.
func relNums(s string) string {
	return numRe.ReplaceAllStringFunc(s, func(n string) string {
		var i uint64
		fmt.Sscanf(n, "%d", &i)
		if i > v2base && v2base > 0 {
			return rel2(i)
		}
		return n
	})
}

func v2KeysSection() {
	c := v2Client("", "")
	k := v2.NewKeysAPI(c)
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	r, err := k.Set(ctx, "/v2/a", "1", nil)
	if err == nil {
		v2base = r.Node.ModifiedIndex - 1
	}
	resp2("v2.set", r, err)
	r, err = k.Set(ctx, "/v2/a", "2", &v2.SetOptions{PrevValue: "1"})
	resp2("v2.set.prevvalue", r, err)
	r, err = k.Set(ctx, "/v2/a", "3", &v2.SetOptions{PrevValue: "nope"})
	resp2("v2.set.prevvalue.fail", r, err)
	r, err = k.Set(ctx, "/v2/a", "3", &v2.SetOptions{PrevIndex: v2base + 2})
	resp2("v2.set.previndex", r, err)
	r, err = k.Set(ctx, "/v2/a", "4", &v2.SetOptions{PrevIndex: 1})
	resp2("v2.set.previndex.fail", r, err)
	r, err = k.Set(ctx, "/v2/a", "4", &v2.SetOptions{PrevExist: v2.PrevNoExist})
	resp2("v2.set.prevnoexist.fail", r, err)
	r, err = k.Set(ctx, "/v2/b", "1", &v2.SetOptions{PrevExist: v2.PrevExist})
	resp2("v2.set.prevexist.fail", r, err)
	r, err = k.Set(ctx, "/v2/ttl", "t", &v2.SetOptions{TTL: 100 * time.Second})
	resp2("v2.set.ttl", r, err)
	r, err = k.Set(ctx, "/v2/ttl", "", &v2.SetOptions{TTL: 100 * time.Second, Refresh: true, PrevExist: v2.PrevExist})
	resp2("v2.set.refresh", r, err)
	r, err = k.Set(ctx, "/v2/dir", "", &v2.SetOptions{Dir: true})
	resp2("v2.set.dir", r, err)
	r, err = k.Set(ctx, "/v2/dir", "x", nil)
	resp2("v2.set.ondir", r, err)
	r, err = k.Set(ctx, "/v2/quiet", "q", &v2.SetOptions{NoValueOnSuccess: true})
	resp2("v2.set.novalue", r, err)
	r, err = k.Create(ctx, "/v2/dir/x", "1")
	resp2("v2.create", r, err)
	r, err = k.Create(ctx, "/v2/dir/x", "1")
	resp2("v2.create.exists", r, err)
	r, err = k.Update(ctx, "/v2/dir/x", "2")
	resp2("v2.update", r, err)
	r, err = k.Update(ctx, "/v2/dir/none", "2")
	resp2("v2.update.missing", r, err)
	r, err = k.Set(ctx, "/v2/dir/sub/y", "deep", nil)
	resp2("v2.set.deep", r, err)
	r, err = k.CreateInOrder(ctx, "/v2/queue", "job1", nil)
	q1 := ""
	if err == nil {
		q1 = r.Node.Key
		out("v2.createinorder", "action=%s key-under-queue=%v value=%s", r.Action, strings.HasPrefix(r.Node.Key, "/v2/queue/"), r.Node.Value)
	} else {
		resp2("v2.createinorder", r, err)
	}
	r, err = k.CreateInOrder(ctx, "/v2/queue", "job2", &v2.CreateInOrderOptions{TTL: 100 * time.Second})
	if err == nil {
		out("v2.createinorder.ttl", "after-first=%v ttl=%v", r.Node.Key > q1, r.Node.TTL > 90)
	} else {
		resp2("v2.createinorder.ttl", r, err)
	}
	r, err = k.Get(ctx, "/v2/queue", &v2.GetOptions{Sort: true})
	if err == nil {
		var vals []string
		for _, n := range r.Node.Nodes {
			vals = append(vals, n.Value)
		}
		out("v2.get.queue.sorted", "%v", vals)
	} else {
		resp2("v2.get.queue.sorted", r, err)
	}

	r, err = k.Get(ctx, "/v2/a", nil)
	resp2("v2.get", r, err)
	r, err = k.Get(ctx, "/v2/a", &v2.GetOptions{Quorum: true})
	resp2("v2.get.quorum", r, err)
	r, err = k.Get(ctx, "/v2/none", nil)
	resp2("v2.get.missing", r, err)
	r, err = k.Get(ctx, "/v2/dir", nil)
	resp2("v2.get.dir", r, err)
	r, err = k.Get(ctx, "/v2/dir", &v2.GetOptions{Recursive: true, Sort: true})
	resp2("v2.get.recursive", r, err)
	r, err = k.Get(ctx, "/v2/a/b", nil)
	resp2("v2.get.underfile", r, err)

	r, err = k.Delete(ctx, "/v2/a", &v2.DeleteOptions{PrevValue: "nope"})
	resp2("v2.delete.prevvalue.fail", r, err)
	r, err = k.Delete(ctx, "/v2/a", &v2.DeleteOptions{PrevValue: "3"})
	resp2("v2.delete.prevvalue", r, err)
	r, err = k.Delete(ctx, "/v2/dir", nil)
	resp2("v2.delete.dir.notdir", r, err)
	r, err = k.Delete(ctx, "/v2/dir", &v2.DeleteOptions{Dir: true})
	resp2("v2.delete.dir.notempty", r, err)
	r, err = k.Set(ctx, "/v2/empty", "", &v2.SetOptions{Dir: true})
	r, err = k.Delete(ctx, "/v2/empty", &v2.DeleteOptions{Dir: true})
	resp2("v2.delete.emptydir", r, err)
	r, err = k.Delete(ctx, "/v2/dir", &v2.DeleteOptions{Recursive: true})
	resp2("v2.delete.recursive", r, err)
	r, err = k.Delete(ctx, "/v2/ttl", &v2.DeleteOptions{PrevIndex: 1})
	resp2("v2.delete.previndex.fail", r, err)
	r, err = k.Delete(ctx, "/v2/none", nil)
	resp2("v2.delete.missing", r, err)
	// a short TTL expires
	_, _ = k.Set(ctx, "/v2/short", "s", &v2.SetOptions{TTL: time.Second})
	time.Sleep(2500 * time.Millisecond)
	r, err = k.Get(ctx, "/v2/short", nil)
	resp2("v2.get.expired", r, err)
	_, _ = k.Delete(ctx, "/v2", &v2.DeleteOptions{Recursive: true})
}

func v2WatchSection() {
	c := v2Client("", "")
	k := v2.NewKeysAPI(c)
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	r, err := k.Set(ctx, "/v2w/a", "1", nil)
	if !must("v2.watch.set", err) {
		return
	}
	v2base = r.Node.ModifiedIndex - 1
	_, _ = k.Set(ctx, "/v2w/a", "2", nil)
	_, _ = k.Set(ctx, "/v2w/d/b", "3", nil)
	_, _ = k.Delete(ctx, "/v2w/a", nil)

	next := func(step string, w v2.Watcher) {
		wctx, wcancel := ctxT(5 * time.Second)
		defer wcancel()
		r, err := w.Next(wctx)
		resp2(step, r, err)
	}
	// from a past index: the key's history, one event at a time
	w := k.Watcher("/v2w/a", &v2.WatcherOptions{AfterIndex: v2base})
	next("v2.watch.afterindex.1", w)
	next("v2.watch.afterindex.2", w)
	next("v2.watch.afterindex.3", w)
	// recursive from the start sees the nested key too
	wr := k.Watcher("/v2w", &v2.WatcherOptions{AfterIndex: v2base, Recursive: true})
	for i := 1; i <= 4; i++ {
		next(fmt.Sprintf("v2.watch.recursive.%d", i), wr)
	}
	// a non-recursive watch on a dir does not see its children
	wn := k.Watcher("/v2w/d", &v2.WatcherOptions{AfterIndex: v2base})
	next("v2.watch.dir.nonrecursive", wn)
	// a live watch: the next change
	wl := k.Watcher("/v2w/live", nil)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = k.Set(context.Background(), "/v2w/live", "now", nil)
	}()
	next("v2.watch.live", wl)
	// using the index a Get returned (X-Etcd-Index) to watch from
	g, err := k.Get(ctx, "/v2w/live", nil)
	if err == nil {
		out("v2.get.index", "index-header-set=%v", g.Index != 0)
		_, _ = k.Set(ctx, "/v2w/live", "after-get", nil)
		wg := k.Watcher("/v2w/live", &v2.WatcherOptions{AfterIndex: g.Index})
		next("v2.watch.fromgetindex", wg)
	}
	// an index cleared from the 1000-event history
	for i := 0; i < 1005; i++ {
		_, _ = k.Set(ctx, "/v2w/bulk", fmt.Sprint(i), nil)
	}
	wc := k.Watcher("/v2w/a", &v2.WatcherOptions{AfterIndex: v2base})
	next("v2.watch.cleared", wc)
	_, _ = k.Delete(ctx, "/v2w", &v2.DeleteOptions{Recursive: true})
}

func v2MembersSection() {
	c := v2Client("", "")
	m := v2.NewMembersAPI(c)
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	list, err := m.List(ctx)
	if err != nil {
		out("v2.members.list", "err(%v)", err)
		return
	}
	var desc []string
	for _, mm := range list {
		desc = append(desc, fmt.Sprintf("%s peers=%v clients=%v id-set=%v", mm.Name, mm.PeerURLs, mm.ClientURLs, mm.ID != ""))
	}
	sort.Strings(desc)
	out("v2.members.list", "n=%d %s", len(list), strings.Join(desc, "; "))
	l, err := m.Leader(ctx)
	if err == nil {
		out("v2.members.leader", "name-set=%v id-set=%v", l.Name != "", l.ID != "")
	} else {
		out("v2.members.leader", "err(%v)", err)
	}
	_, err = m.Add(ctx, "not a url")
	out("v2.members.add.bad", "err-set=%v %v", err != nil, err)
	_, err = m.Add(ctx, list[0].PeerURLs[0])
	out("v2.members.add.existing", "err-set=%v %v", err != nil, err)
	// a voter that never starts: only where quorum survives it (see clusterSection)
	var added *v2.Member
	if len(list) >= 3 {
		added, err = m.Add(ctx, spare(6))
	} else {
		err = fmt.Errorf("skipped with %d member(s)", len(list))
	}
	if err == nil {
		out("v2.members.add", "peers=%v name=%q", added.PeerURLs, added.Name)
		err = m.Update(ctx, added.ID, []string{spare(3)})
		out("v2.members.update", "err=%v", err)
		for i := 0; i < 20; i++ {
			err = m.Remove(ctx, added.ID)
			if err == nil {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		out("v2.members.remove", "err=%v", err)
	} else {
		out("v2.members.add", "err(%v)", err)
	}
	err = m.Remove(ctx, "deadbeef")
	out("v2.members.remove.missing", "err=%v", err)
	err = m.Update(ctx, "deadbeef", []string{spare(4)})
	out("v2.members.update.missing", "err=%v", err)
	list2, err := m.List(ctx)
	if err == nil {
		out("v2.members.list.after", "n=%d", len(list2))
	}
}

func v2AuthSection() {
	c := v2ClientOn(endpoints[:1], "", "")
	ctx, cancel := ctxT(30 * time.Second)
	defer cancel()
	auth := v2.NewAuthAPI(c)
	users := v2.NewAuthUserAPI(c)
	roles := v2.NewAuthRoleAPI(c)
	// an error's trailing [index] is the store's index: relative to the section's base
	step := func(name string, err error) {
		out("v2.auth."+name, "err=%s", indexRe.ReplaceAllStringFunc(fmt.Sprint(err), relNums))
	}
	if r, err := v2.NewKeysAPI(c).Get(ctx, "/", nil); err == nil {
		v2base = r.Index
	}
	step("enable.noroot", auth.Enable(ctx))
	step("user.add.root", users.AddUser(ctx, "root", "rootpw"))
	step("user.add.alice", users.AddUser(ctx, "alice", "alicepw"))
	step("user.add.again", users.AddUser(ctx, "alice", "alicepw"))
	step("role.add", roles.AddRole(ctx, "writer"))
	step("role.add.again", roles.AddRole(ctx, "writer"))
	_, err := roles.GrantRoleKV(ctx, "writer", []string{"/v2a/*"}, v2.ReadWritePermission)
	step("role.grant", err)
	_, err = roles.GrantRoleKV(ctx, "writer", []string{"/v2r"}, v2.ReadPermission)
	step("role.grant.read", err)
	r, err := roles.GetRole(ctx, "writer")
	if err == nil {
		out("v2.auth.role.get", "read=%v write=%v", r.Permissions.KV.Read, r.Permissions.KV.Write)
	} else {
		step("role.get", err)
	}
	_, err = roles.GetRole(ctx, "nope")
	step("role.get.missing", err)
	u, err := users.GrantUser(ctx, "alice", []string{"writer"})
	if err == nil {
		out("v2.auth.user.grant", "roles=%v", u.Roles)
	} else {
		step("user.grant", err)
	}
	_, err = users.GrantUser(ctx, "alice", []string{"nope"})
	step("user.grant.missingrole", err)
	u, err = users.GetUser(ctx, "alice")
	if err == nil {
		out("v2.auth.user.get", "user=%s roles=%v", u.User, u.Roles)
	} else {
		step("user.get", err)
	}
	ul, err := users.ListUsers(ctx)
	if err == nil {
		sort.Strings(ul)
		out("v2.auth.user.list", "%v", ul)
	} else {
		step("user.list", err)
	}
	rl, err := roles.ListRoles(ctx)
	if err == nil {
		sort.Strings(rl)
		out("v2.auth.role.list", "%v", rl)
	} else {
		step("role.list", err)
	}
	step("enable", auth.Enable(ctx))
	step("enable.again", auth.Enable(ctx))

	// with auth on: guest still has full access (its default role), alice only her prefix
	k := v2.NewKeysAPI(c)
	_, err = k.Set(ctx, "/v2a/x", "guest", nil)
	step("guest.set", err)
	_, err = users.ListUsers(ctx)
	step("guest.user.list", err)
	ac := v2ClientOn(endpoints[:1], "alice", "alicepw")
	ak := v2.NewKeysAPI(ac)
	_, err = ak.Set(ctx, "/v2a/y", "alice", nil)
	step("alice.set.allowed", err)
	_, err = ak.Set(ctx, "/elsewhere", "alice", nil)
	step("alice.set.denied", err)
	_, err = ak.Get(ctx, "/v2r", nil)
	step("alice.get.read", err)
	bad := v2ClientOn(endpoints[:1], "alice", "wrong")
	_, err = v2.NewKeysAPI(bad).Get(ctx, "/v2a/y", nil)
	step("alice.wrongpw", err)
	rc := v2ClientOn(endpoints[:1], "root", "rootpw")
	rroles := v2.NewAuthRoleAPI(rc)
	rusers := v2.NewAuthUserAPI(rc)
	step("guest.revoke", func() error {
		_, err := rroles.RevokeRoleKV(ctx, "guest", []string{"/*"}, v2.ReadWritePermission)
		return err
	}())
	_, err = k.Set(ctx, "/v2a/x", "guest2", nil)
	step("guest.set.afterrevoke", err)
	_, err = ak.Set(ctx, "/v2a/y", "alice2", nil)
	step("alice.set.afterrevoke", err)
	_, err = rroles.RevokeRoleKV(ctx, "writer", []string{"/v2r"}, v2.ReadPermission)
	step("role.revoke", err)
	_, err = rusers.RevokeUser(ctx, "alice", []string{"writer"})
	step("user.revoke", err)
	_, err = rusers.ChangePassword(ctx, "alice", "newpw")
	step("user.passwd", err)
	_, err = v2.NewKeysAPI(v2ClientOn(endpoints[:1], "alice", "newpw")).Get(ctx, "/v2a/y", nil)
	step("alice.newpw.get", err)
	step("disable.anon", auth.Disable(ctx))
	step("disable", v2.NewAuthAPI(rc).Disable(ctx))
	step("user.remove", users.RemoveUser(ctx, "alice"))
	step("user.remove.again", users.RemoveUser(ctx, "alice"))
	step("role.remove", roles.RemoveRole(ctx, "writer"))
	step("role.remove.root", roles.RemoveRole(ctx, "root"))
	step("user.remove.root", users.RemoveUser(ctx, "root"))
	_, _ = k.Delete(ctx, "/v2a", &v2.DeleteOptions{Recursive: true})
	_, _ = k.Delete(ctx, "/elsewhere", nil)
}

// ---------------------------------------------------------------- require leader

// requireLeaderProbe: a watch and a read that require a leader, on a member that loses
// its quorum (run.sh stops the other members once the ready line is out). etcd ends the
// watch with "etcdserver: no leader" after 3 election timeouts without a leader, and
// refuses the read at once.
func requireLeaderProbe() {
	c, err := newClient(endpoints[:1], "", "")
	if err != nil {
		fmt.Println("connect:", err)
		os.Exit(2)
	}
	defer c.Close()
	ctx := clientv3.WithRequireLeader(context.Background())
	wch := c.Watch(ctx, "probe", clientv3.WithCreatedNotify())
	<-wch
	pctx, cancel := ctxT(5 * time.Second)
	pr, err := c.Put(pctx, "probe", "1")
	cancel()
	if err == nil {
		base = pr.Header.Revision - 1
	}
	s, _ := collect(wch, 1, 5*time.Second)
	out("probe.watch.event", "%s", s)
	out("probe.ready", "stop the other members now")
	start := time.Now()
	select {
	case r, ok := <-wch:
		out("probe.watch.end", "open=%v canceled=%v err=%s within-15s=%v", ok, r.Canceled, errs(r.Err()), time.Since(start) < 15*time.Second)
	case <-time.After(30 * time.Second):
		out("probe.watch.end", "(nothing in 30 s)")
	}
	gctx, gcancel := ctxT(5 * time.Second)
	_, err = c.Get(clientv3.WithRequireLeader(gctx), "probe", clientv3.WithSerializable())
	gcancel()
	out("probe.get.requireleader", "%s", errs(err))
	gctx, gcancel = ctxT(5 * time.Second)
	_, err = c.Get(gctx, "probe", clientv3.WithSerializable())
	gcancel()
	out("probe.get.serializable", "%s", errs(err))
}

// ---------------------------------------------------------------- revoke, then write elsewhere

// authRevokeProbe: alice may write a/; root revokes that through the first member and,
// once it is acknowledged, alice writes through the last one. etcd checks the write when
// it applies it, after the revoke: refused every time.
func authRevokeProbe() {
	ctx, cancel := ctxT(120 * time.Second)
	defer cancel()
	c0, err := newClient(endpoints[:1], "", "")
	if !must("probe.auth.connect", err) {
		return
	}
	defer c0.Close()
	_, _ = c0.UserAdd(ctx, "root", "r")
	_, _ = c0.UserGrantRole(ctx, "root", "root")
	_, _ = c0.RoleAdd(ctx, "rw")
	_, _ = c0.UserAdd(ctx, "alice", "a")
	_, _ = c0.UserGrantRole(ctx, "alice", "rw")
	_, _ = c0.RoleGrantPermission(ctx, "rw", "a/", "a0", clientv3.PermissionType(clientv3.PermReadWrite))
	if _, err := c0.AuthEnable(ctx); !must("probe.auth.enable", err) {
		return
	}
	root, err := newClient(endpoints[:1], "root", "r")
	if !must("probe.auth.root", err) {
		return
	}
	defer root.Close()
	alice, err := newClient(endpoints[len(endpoints)-1:], "alice", "a")
	if !must("probe.auth.alice", err) {
		return
	}
	defer alice.Close()
	accepted, refused := 0, 0
	for i := 0; i < 30; i++ {
		if _, err := root.RoleRevokePermission(ctx, "rw", "a/", "a0"); err != nil {
			out("probe.auth.revoke", "%s", errs(err))
			return
		}
		if _, err := alice.Put(ctx, "a/x", fmt.Sprint(i)); err == nil {
			accepted++
		} else if rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrPermissionDenied) {
			refused++
		}
		_, _ = root.RoleGrantPermission(ctx, "rw", "a/", "a0", clientv3.PermissionType(clientv3.PermReadWrite))
		time.Sleep(20 * time.Millisecond)
	}
	out("probe.auth.revoke.then.put", "accepted=%d permission-denied=%d of 30", accepted, refused)
	_, err = root.AuthDisable(ctx)
	out("probe.auth.disable", "%s", errs(err))
}
