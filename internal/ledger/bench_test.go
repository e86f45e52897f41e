package ledger_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/ledger"
)

var benchArgs = map[string]any{"path": "/workspace/notes.md", "content": "hello", "mode": "overwrite"}

// BenchmarkDispatchCycle is one write's ledger cost: Begin (durable marker),
// Sent, Settle (durable removal) — two commits, each a file write, a file
// fsync and a directory fsync.
func BenchmarkDispatchCycle(b *testing.B) {
	l := open(b, b.TempDir())
	for b.Loop() {
		d, err := l.Begin("fs", "write_file", benchArgs, "mcp")
		if err != nil {
			b.Fatal(err)
		}
		d.Sent()
		if err := d.Settle(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(ledger.Commits(l))/float64(b.N), "commits/op")
}

// BenchmarkConcurrentDispatch16 runs b.N dispatch cycles over 16
// goroutines sharing one Ledger, as a daemon with 16 writes in flight does.
// ns/op is wall time per dispatch; commits/op shows the group commit.
func BenchmarkConcurrentDispatch16(b *testing.B) {
	l := open(b, b.TempDir())
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				d, err := l.Begin("fs", "write_file", benchArgs, "mcp")
				if err != nil {
					b.Error(err)
					return
				}
				d.Sent()
				if err := d.Settle(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "dispatches/s")
	b.ReportMetric(float64(ledger.Commits(l))/float64(b.N), "commits/op")
}

// BenchmarkEntries is the read the engine does before each write decision.
func BenchmarkEntries(b *testing.B) {
	dir := b.TempDir()
	l := open(b, dir)
	for range 3 {
		d, _ := l.Begin("fs", "write_file", benchArgs, "mcp")
		d.Sent()
		d.Unknown("timeout")
	}
	for b.Loop() {
		if es, err := l.Entries("fs"); err != nil || len(es) != 3 {
			b.Fatal(es, err)
		}
	}
}

// BenchmarkEntriesLargeHistory is the same read with 10,000 cleared entries
// in the file (years of clears, 2.6 MB): the first read parses the file,
// the timed ones find it unchanged by its identity and neither read nor
// parse it.
func BenchmarkEntriesLargeHistory(b *testing.B) {
	dir := b.TempDir()
	cleared := make([]ledger.Cleared, 10_000)
	for i := range cleared {
		cleared[i].ID = fmt.Sprintf("%016x", i)
		cleared[i].Server, cleared[i].Tool, cleared[i].Time = "fs", "write_file", "2026-01-01T00:00:00.000000000Z"
		cleared[i].ArgsSHA256 = strings.Repeat("ab", 32)
		cleared[i].ClearedAt, cleared[i].Reason = "2026-01-02T00:00:00.000000000Z", "checked"
	}
	raw, _ := json.Marshal(map[string]any{"version": 1, "entries": []any{}, "cleared": cleared, "in_flight": []any{}})
	if err := os.WriteFile(filepath.Join(dir, ledger.FileName), raw, 0o600); err != nil {
		b.Fatal(err)
	}
	l := open(b, dir)
	if _, err := l.Entries("fs"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := l.Entries("fs"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPendingQuiet is what a decision reads of a server without
// entries from a ledger one write left (its three files exist) and that
// has been quiet since, as most decisions find it.
func BenchmarkPendingQuiet(b *testing.B) {
	l := open(b, b.TempDir())
	d, err := l.Begin("fs", "write_file", benchArgs, "mcp")
	if err != nil {
		b.Fatal(err)
	}
	d.Sent()
	if err := d.Settle(); err != nil {
		b.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // older than the timestamps' granularity
	for b.Loop() {
		if p, err := l.Pending("other", ledger.Listed); err != nil || p.Total != 0 {
			b.Fatal(p, err)
		}
	}
}
