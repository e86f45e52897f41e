package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// BenchmarkDecideTail is BenchmarkDecide/M with every call's time kept
// beside its class, tool, argument shape and whether a garbage collection
// ended during it; at the end it prints what the calls above the p95 and
// the p99 are made of, then decides each call of the top 1% again, alone,
// five times (a copy whose meta.request differs, so the decision cache does
// not answer it), and prints the re-runs' median against the first time:
// a call that is slow again is slow itself, one that is not was slowed by
// the collector or the scheduler. Not part of make bench:
//
//	go test -run '^$' -bench '^BenchmarkDecideTail$' -benchtime 5000x ./internal/bench/
func BenchmarkDecideTail(b *testing.B) {
	f := load(b, M)
	f.warmTools(b)
	calls := f.w.Fresh(b.N)
	ctx := context.Background()
	type rec struct {
		i       int
		d       time.Duration
		class   string
		gc      bool
		rerun   time.Duration
		rerunGC bool
	}
	recs := make([]rec, b.N)
	gcs := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	cycles := func() uint64 { metrics.Read(gcs); return gcs[0].Value.Uint64() }
	decide := func(c decision.Call) string {
		d, err := f.eng.Decide(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		return outcomeClass(d)
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		g0 := cycles()
		t0 := time.Now()
		c := decide(calls[i])
		d := time.Since(t0)
		recs[i] = rec{i: i, d: d, class: c, gc: cycles() != g0}
	}
	b.StopTimer()
	if b.N < 200 {
		return
	}
	byTime := slices.Clone(recs)
	slices.SortFunc(byTime, func(a, b rec) int { return int(a.d - b.d) })
	p50, p95, p99 := byTime[len(byTime)/2].d, byTime[len(byTime)*95/100].d, byTime[len(byTime)*99/100].d
	b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
	classP50 := map[string]time.Duration{}
	byClass := map[string][]time.Duration{}
	for _, r := range recs {
		byClass[r.class] = append(byClass[r.class], r.d)
	}
	for c, ds := range byClass {
		slices.Sort(ds)
		classP50[c] = ds[len(ds)/2]
	}
	top := byTime[len(byTime)*99/100:]
	// the top 1% again, alone
	for k := range top {
		c := calls[top[k].i]
		var ds []time.Duration
		anyGC := false
		for n := range 5 {
			again := c
			again.Args = maps.Clone(c.Args)
			meta := maps.Clone(c.Args["meta"].(map[string]any))
			meta["request"] = fmt.Sprintf("%s-again%d", meta["request"], n)
			again.Args["meta"] = meta
			g0 := cycles()
			t0 := time.Now()
			decide(again)
			ds = append(ds, time.Since(t0))
			anyGC = anyGC || cycles() != g0
		}
		slices.Sort(ds)
		top[k].rerun, top[k].rerunGC = ds[len(ds)/2], anyGC
	}
	var out strings.Builder
	fmt.Fprintf(&out, "M, %d distinct calls: p50 %v, p95 %v, p99 %v (%.1f× p50)\n", b.N, p50, p95, p99, float64(p99)/float64(p50))
	share := func(rs []rec, key func(rec) string) string {
		n := map[string]int{}
		for _, r := range rs {
			n[key(r)]++
		}
		ks := slices.Collect(maps.Keys(n))
		slices.SortFunc(ks, func(a, b string) int { return n[b] - n[a] })
		var s []string
		for _, k := range ks {
			s = append(s, fmt.Sprintf("%s %.1f%%", k, 100*float64(n[k])/float64(len(rs))))
		}
		return strings.Join(s, ", ")
	}
	class := func(r rec) string { return r.class }
	shape := func(r rec) string { return argShape(calls[r.i]) }
	gc := func(r rec) string {
		if r.gc {
			return "a GC cycle ended during the call"
		}
		return "no GC cycle ended"
	}
	fmt.Fprintf(&out, "all calls, by class: %s\n", share(recs, class))
	fmt.Fprintf(&out, "all calls, GC: %s\n", share(recs, gc))
	for _, q := range []struct {
		name string
		rs   []rec
	}{{"above p95", byTime[len(byTime)*95/100:]}, {"top 1%", top}} {
		fmt.Fprintf(&out, "%s, by class: %s\n", q.name, share(q.rs, class))
		fmt.Fprintf(&out, "%s, by argument shape: %s\n", q.name, share(q.rs, shape))
		fmt.Fprintf(&out, "%s, GC: %s\n", q.name, share(q.rs, gc))
	}
	slow := 0
	for _, r := range top {
		if r.rerun > 2*classP50[r.class] {
			slow++
		}
	}
	fmt.Fprintf(&out, "top 1%%, decided again alone (median of 5): %d of %d above 2× their class's p50\n", slow, len(top))
	for _, r := range top {
		fmt.Fprintf(&out, "  %-22s %-10s %-14s first %8v (GC %-5v) again %8v (GC %-5v) class p50 %v\n",
			r.class, calls[r.i].Tool.Name, argShape(calls[r.i]), r.d.Round(time.Microsecond), r.gc,
			r.rerun.Round(time.Microsecond), r.rerunGC, classP50[r.class].Round(time.Microsecond))
	}
	fmt.Fprint(os.Stdout, out.String())
}

// argShape names how a workload call's arguments differ from the common
// shape (args in workload.go): the break or extra key it carries, if any.
func argShape(c decision.Call) string {
	a := c.Args
	switch {
	case !strings.HasPrefix(a["path"].(string), "/workspace/"):
		return "path-outside"
	case a["options"].(map[string]any)["force"] == true:
		return "force"
	case len(a["tags"].([]any)) > 8:
		return "duplicate-tag"
	case strings.HasPrefix(a["content"].(string), "-----BEGIN"):
		return "private-key"
	case a["verbose"] != nil:
		return "unknown-key"
	case a["cursor"] != nil:
		return "cursor"
	}
	return "common"
}
