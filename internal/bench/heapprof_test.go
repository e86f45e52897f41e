package bench

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

// TestHeapProfile loads one engine on the L config (M with
// MCPX_HEAPPROF_SHAPE=M), collects the garbage and writes the heap profile
// to $MCPX_HEAPPROF: its inuse_space is what a prepared engine holds, by
// the code that allocated it (docs/performance.md). Run it with
// -test.memprofilerate 4096 for a fine sample. Skipped without
// $MCPX_HEAPPROF.
func TestHeapProfile(t *testing.T) {
	out := os.Getenv("MCPX_HEAPPROF")
	if out == "" {
		t.Skip("writes its profile only when MCPX_HEAPPROF names a file")
	}
	s := L
	if os.Getenv("MCPX_HEAPPROF_SHAPE") == "M" {
		s = M
	}
	opts, err := Generate(s).Options(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	prepareState(t, opts.StateDir)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	eng, err := mcpxpolicy.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC()
	time.Sleep(100 * time.Millisecond) // finalizers, then the last frees
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("%s: the prepared engine holds %.1f MiB", s.Name, float64(after.HeapAlloc-before.HeapAlloc)/(1<<20))
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(eng)
}
