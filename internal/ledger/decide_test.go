//go:build linux

package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// The decision tests and benchmarks below run the whole engine (the SDK's
// Engine over examples/mcpx-policy.yaml) on a state dir holding a large
// ledger.

var (
	examplesConfig = filepath.Join("..", "..", "examples", "mcpx-policy.yaml")
	writeFileTool  = decision.Tool{Name: "write_file",
		Annotations: &decision.Annotations{ReadOnlyHint: new(false), DestructiveHint: new(true)},
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}}}
)

// largeLedger writes a ledger with n unknown-outcome entries for fs (in
// shuffled order, so the oldest are not first in the file), n/10 for git
// and n/10 cleared records, and returns the ids of fs's entries, oldest
// first.
func largeLedger(tb testing.TB, dir string, n int) []string {
	tb.Helper()
	entry := func(i int, server string) ledger.Entry {
		var e ledger.Entry
		e.ID = fmt.Sprintf("%s%014x", server[:2], i)
		e.Server, e.Tool, e.Surface, e.Cause = server, "write_file", "mcp", "timeout"
		e.ArgsSHA256 = fmt.Sprintf("%064x", i)
		e.Time = fmt.Sprintf("2026-01-01T00:00:00.%09dZ", i)
		return e
	}
	var entries []ledger.Entry
	var ids []string
	for i := range n {
		entries = append(entries, entry(i, "fs"))
		ids = append(ids, entries[i].ID)
	}
	for i := range n / 10 {
		entries = append(entries, entry(i, "git"))
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	cleared := make([]ledger.Cleared, n/10)
	for i := range cleared {
		cleared[i] = ledger.Cleared{Entry: entry(n+i, "fs"), ClearedAt: "2026-01-02T00:00:00.000000000Z", Reason: "checked"}
	}
	raw, err := json.Marshal(map[string]any{"version": 1, "entries": entries, "cleared": cleared, "in_flight": []any{}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ledger.FileName), raw, 0o600); err != nil {
		tb.Fatal(err)
	}
	return ids
}

func newEngine(tb testing.TB, dir string) *mcpxpolicy.Engine {
	tb.Helper()
	// These tests count reads and parses, not time: a shared CI machine
	// may take seconds for the first parse of a large ledger.
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{examplesConfig}, StateDir: dir, Env: []string{}, DecideTimeout: time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	return eng
}

func writeCall(i int) decision.Call {
	return decision.Call{Server: "fs", Tool: writeFileTool, Surface: "mcp",
		Args: map[string]any{"path": fmt.Sprintf("/workspace/notes-%d.md", i), "content": "hello"}}
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime(tb testing.TB) int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// fileWatch counts the opens and reads of one file (inotify IN_OPEN and
// IN_ACCESS), whoever makes them.
type fileWatch struct{ fd int }

func watchFile(t *testing.T, path string) *fileWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return &fileWatch{fd: fd}
}

// events drains the queue and returns how many opens and reads it held.
func (w *fileWatch) events(t *testing.T) (opens, reads int) {
	t.Helper()
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err == unix.EAGAIN {
			return opens, reads
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_OPEN != 0 {
				opens++
			}
			if ev.Mask&unix.IN_ACCESS != 0 {
				reads++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// TestLedgerLargeDecision: with 100,000 unknown-outcome entries, a write
// decision reads the ledger file once — the first decision; later ones
// neither open nor read it — and its deny lists the oldest Listed entries
// and the total, whichever way it is rendered or sent to a stock OPA.
func TestLedgerLargeDecision(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	ids := largeLedger(t, dir, 100_000)
	eng := newEngine(t, dir)
	w := watchFile(t, filepath.Join(dir, ledger.FileName))

	d, err := eng.Decide(context.Background(), writeCall(0))
	if err != nil {
		t.Fatal(err)
	}
	if opens, reads := w.events(t); opens != 1 || reads == 0 {
		t.Fatalf("the first decision opened the file %d times and read it %d times; want it read once", opens, reads)
	}
	for i := 1; i <= 50; i++ {
		if d, err = eng.Decide(context.Background(), writeCall(i)); err != nil {
			t.Fatal(err)
		}
	}
	if opens, reads := w.events(t); opens != 0 || reads != 0 {
		t.Fatalf("50 decisions on an unchanged ledger opened it %d times and read it %d times; want neither", opens, reads)
	}

	if d.Outcome != decision.Deny || d.Reasons[0].Code != decision.UnknownOutcomePending {
		t.Fatalf("decision %s %v; want an UnknownOutcomePending deny", d.Outcome, d.Reasons)
	}
	r := d.Reasons[0]
	details, _ := json.Marshal(r.Details)
	var got struct {
		Entries []struct{ ID string }
		Total   int
	}
	if err := json.Unmarshal(details, &got); err != nil {
		t.Fatal(err)
	}
	if got.Total != 100_000 || len(got.Entries) != ledger.Listed {
		t.Fatalf("details list %d entries, total %d; want %d and 100000", len(got.Entries), got.Total, ledger.Listed)
	}
	for i, e := range got.Entries {
		if e.ID != ids[i] {
			t.Fatalf("entry %d is %s, want %s: the oldest, oldest first", i, e.ID, ids[i])
		}
	}
	if !strings.Contains(r.Message, "100000 earlier writes have an unknown outcome (the oldest 10: ") ||
		!strings.Contains(r.Message, "and 99990 more, listed by: mcpx-policy writes") {
		t.Fatalf("message: %s", r.Message)
	}
	for _, surface := range []string{mcpxpolicy.SurfaceDaemon, mcpxpolicy.SurfaceMCP, mcpxpolicy.SurfaceCLI} {
		rendered, err := mcpxpolicy.Render(surface, writeCall(50), mcpxpolicy.Redact(writeCall(50), d))
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(rendered)
		if err != nil {
			t.Fatal(err)
		}
		if len(body) > 16<<10 {
			t.Errorf("the %s rendering is %d bytes; want a bounded body", surface, len(body))
		}
	}

	// A stock OPA gets the same bounded input.
	in, err := eng.OPAInput(writeCall(0))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Ledger struct {
			Entries []any `json:"entries"`
			Total   int   `json:"total"`
		} `json:"ledger"`
	}
	if err := json.Unmarshal(in, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Ledger.Entries) != ledger.Listed || doc.Ledger.Total != 100_000 || len(in) > 16<<10 {
		t.Fatalf("OPA input: %d entries, total %d, %d bytes", len(doc.Ledger.Entries), doc.Ledger.Total, len(in))
	}
}

// TestPendingLargeLedger: Pending returns the oldest entries of the server
// and the total from one parse, however often it is asked, and parses
// again once the file changes.
func TestPendingLargeLedger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 20_000 // the reads' cost is the decision test's (100,000); this one counts parses
	ids := largeLedger(t, dir, n)
	l := open(t, dir)
	for range 100 {
		p, err := l.Pending("fs", ledger.Listed)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != n || len(p.Entries) != ledger.Listed || p.Entries[0].ID != ids[0] || p.Entries[9].ID != ids[9] {
			t.Fatalf("Pending = %d entries (%v…), total %d", len(p.Entries), p.Entries[0].ID, p.Total)
		}
		if p, _ := l.Pending("git", 3); p.Total != n/10 || len(p.Entries) != 3 {
			t.Fatalf("git: %d entries, total %d", len(p.Entries), p.Total)
		}
	}
	if n := ledger.Parses(l); n != 1 {
		t.Fatalf("200 reads parsed the file %d times; want once", n)
	}
	// A change by another process: parsed again, once.
	other := open(t, dir)
	if _, err := other.Clear("fs", ids[0], "checked"); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		p, err := l.Pending("fs", ledger.Listed)
		if err != nil || p.Total != n-1 || p.Entries[0].ID != ids[1] {
			t.Fatalf("after a clear: %+v, %v", p.Entries[:1], err)
		}
	}
	if n := ledger.Parses(l); n != 2 {
		t.Fatalf("the file was parsed %d times; want twice", n)
	}
}

// BenchmarkDecideLedger is one write decision through the SDK with 0, 1,
// 10, 1,000 and 100,000 unknown-outcome entries for the server (and a
// tenth as many for another server and cleared). Each iteration decides a
// distinct call, so the decision cache never answers. Without entries the
// decision is an ask, with them a deny that lists up to 10. cpu-ns/op is
// the process's CPU time (user and system, GC included) per decision,
// steadier than ns/op on a machine shared with other work.
func BenchmarkDecideLedger(b *testing.B) {
	for _, n := range []int{0, 1, 10, 1_000, 100_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "state")
			if n > 0 {
				largeLedger(b, dir, n)
			}
			eng := newEngine(b, dir)
			want := decision.Ask
			if n > 0 {
				want = decision.Deny
			}
			if d, err := eng.Decide(context.Background(), writeCall(-1)); err != nil || d.Outcome != want {
				b.Fatalf("%s, %v; want %s", d.Outcome, err, want)
			}
			i := 0
			cpu0 := cpuTime(b)
			for b.Loop() {
				i++
				if _, err := eng.Decide(context.Background(), writeCall(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestPendingWithoutAFileAllocatesLittle: a decision reads the ledger
// every time, and most ledgers have no file: that read shares one empty
// parse and its index instead of building them again (21 allocations a
// read before, 15 after; the rest are the checks of the state dir's
// files).
func TestPendingWithoutAFileAllocatesLittle(t *testing.T) {
	l := open(t, t.TempDir())
	if p, err := l.Pending("fs", ledger.Listed); err != nil || p.Total != 0 {
		t.Fatalf("Pending = %v, %v", p, err)
	}
	n := testing.AllocsPerRun(100, func() { l.Pending("fs", ledger.Listed) })
	t.Logf("%.0f allocations a read", n)
	if n > 16 {
		t.Errorf("Pending of a ledger without a file: %.0f allocations a read; want at most 16", n)
	}
}
