package bench

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
)

// BenchmarkDecideOutcome is BenchmarkDecide/M on the calls of one outcome
// class only (outcomeClass: "allow", "ask:write_mode", "deny:hidden", …;
// MCPX_CLASS, default allow), picked by the native baseline's decision,
// and of one argument shape only if MCPX_SHAPE names one (argShape:
// "private-key", "path-outside", …) and of one tool only if MCPX_TOOL
// names one ("write_32"):
// what one class of call costs, allocs/op included. Profiles of the timed
// calls alone, without the fixture's setup, go to MCPX_CPU (a CPU
// profile) and MCPX_MEM (the allocation profiles before and after, for
// `go tool pprof -base MEM.before MEM.after`); GODEBUG=profstackdepth=512
// keeps OPA's deep stacks whole. Not part of make bench:
//
//	MCPX_CLASS=allow go test -run '^$' -bench DecideOutcome -benchmem -benchtime 3000x ./internal/bench/
func BenchmarkDecideOutcome(b *testing.B) {
	want, shape, tool := os.Getenv("MCPX_CLASS"), os.Getenv("MCPX_SHAPE"), os.Getenv("MCPX_TOOL")
	if want == "" {
		want = "allow"
	}
	f := load(b, M)
	f.warmTools(b)
	calls := make([]decision.Call, 0, b.N)
	for tries := 0; len(calls) < b.N; tries++ {
		if tries > 1000 {
			b.Fatalf("fewer than %d calls of class %q", b.N, want)
		}
		for _, c := range f.w.Fresh(max(b.N, 1000)) {
			if len(calls) < b.N && outcomeClass(f.native.Decide(c)) == want && (shape == "" || argShape(c) == shape) && (tool == "" || c.Tool.Name == tool) {
				calls = append(calls, c)
			}
		}
	}
	ctx := context.Background()
	if out := os.Getenv("MCPX_CPU"); out != "" && b.N > 1 {
		stop := profileCPU(b, out)
		defer stop()
	}
	if out := os.Getenv("MCPX_MEM"); out != "" && b.N > 1 {
		writeAllocs(b, out+".before")
		defer writeAllocs(b, out+".after")
	}
	TimedByClass(b, func(i int) string {
		d, err := f.eng.Decide(ctx, calls[i])
		if err != nil {
			b.Fatal(err)
		}
		return outcomeClass(d)
	})
}

// profileCPU starts a CPU profile into file out; the returned func stops it.
func profileCPU(b *testing.B, out string) func() {
	fh, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(fh); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := fh.Close(); err != nil {
			b.Error(err)
		}
	}
}

// writeAllocs writes the allocation profile, after a collection, to out.
func writeAllocs(b *testing.B, out string) {
	runtime.GC()
	fh, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	if err := pprof.Lookup("allocs").WriteTo(fh, 0); err != nil {
		b.Error(err)
	}
}
