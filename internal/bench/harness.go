package bench

import (
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// The timing and the call supply of every benchmark of the reference
// workloads: this package's and the engine's own (internal/engine's
// bench_test.go, which measures through hooks that only its tests see).

// seq numbers the calls handed out, so no two timed decisions in a
// process see the same call: "distinct calls" stay distinct across -count
// runs and never hit the decision cache.
var seq atomic.Int64

// Fresh returns n of w's calls never handed out before in this process
// (by Fresh on any workload): calls number 1,000,000 and up, in order.
func (w *Workload) Fresh(n int) []decision.Call {
	start := int(seq.Add(int64(n))) - n
	calls := make([]decision.Call, n)
	for i := range calls {
		calls[i] = w.Call(1_000_000 + start + i)
	}
	return calls
}

// Timed runs one(i) b.N times, timing each call, and reports the p50 and
// p99 of those per-call timings next to ns/op (and allocations).
func Timed(b *testing.B, one func(i int)) {
	b.Helper()
	TimedByClass(b, func(i int) string { one(i); return "" })
}

// TimedByClass is Timed for calls that name their class (a decision's
// outcome and step): besides p50 and p99 over all calls it reports, per
// class, p50 ("<class>-p50-ns"), p99 and the share of calls ("<class>-pct").
// The class is named after the call's timing ends.
func TimedByClass(b *testing.B, one func(i int) string) {
	b.Helper()
	ds := make([]time.Duration, b.N)
	classes := make([]string, b.N)
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		c := one(i)
		ds[i] = time.Since(t0)
		classes[i] = c
	}
	b.StopTimer()
	by := map[string][]time.Duration{}
	for i, c := range classes {
		if c != "" {
			by[c] = append(by[c], ds[i])
		}
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(ds[min(len(ds)-1, len(ds)*99/100)].Nanoseconds()), "p99-ns")
	for c, cds := range by {
		slices.Sort(cds)
		b.ReportMetric(float64(cds[len(cds)/2].Nanoseconds()), c+"-p50-ns")
		b.ReportMetric(float64(cds[min(len(cds)-1, len(cds)*99/100)].Nanoseconds()), c+"-p99-ns")
		b.ReportMetric(100*float64(len(cds))/float64(len(ds)), c+"-pct")
	}
}
