package bench

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"sync/atomic"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// loadWorkload is load for a workload that is not a plain shape (the path
// form): prepared once per process, kept under its shape's name.
func loadWorkload(b testing.TB, w *Workload) *fixture {
	b.Helper()
	fixMu.Lock()
	defer fixMu.Unlock()
	if f := fixtures[w.Shape.Name]; f != nil {
		return f
	}
	f := &fixture{w: w}
	dir, err := os.MkdirTemp("", "mcpx-bench-"+w.Shape.Name)
	if err != nil {
		b.Fatal(err)
	}
	f.dir = dir
	if f.opts, err = w.Options(dir); err != nil {
		b.Fatal(err)
	}
	if f.eng, err = mcpxpolicy.New(context.Background(), f.opts); err != nil {
		b.Fatal(err)
	}
	if f.native, err = NewNative(w); err != nil {
		b.Fatal(err)
	}
	fixtures[w.Shape.Name] = f
	return f
}

// pathSeq numbers the calls of BenchmarkDecidePaths apart from Fresh's:
// each form takes the same numbers in turn (so the regex and path forms
// decide the same calls), never seen before by that form's engine.
var pathSeq = map[string]*atomic.Int64{"regex": {}, "pathWithin": {}, "tricks": {}, "native": {}, "refusals": {}}

func pathCalls(form string, n int, call func(int) decision.Call) []decision.Call {
	start := int(pathSeq[form].Add(int64(n))) - n
	calls := make([]decision.Call, n)
	for i := range calls {
		calls[i] = call(3_000_000 + start + i)
	}
	return calls
}

// BenchmarkDecidePaths is what a path-checked call costs: BenchmarkDecide
// on M's calls, every one of which a workspace rule checks (pool rule 0
// applies to every tool), with that rule written as the regular expression
// M has ("regex"), in path form ("pathWithin"), in path form on calls
// whose path is a trick it refuses ("tricks"), the native Go baseline on
// the path form ("native": santhosh with pathWithin in Go), and the
// argument-rule refusals of M's calls alone in both forms
// ("regex-refusals", "pathWithin-refusals": allocs/op is that class's),
// one after the other in one process. Figures per outcome class, as
// BenchmarkDecide.
func BenchmarkDecidePaths(b *testing.B) {
	regex := load(b, M)
	paths := loadWorkload(b, regex.w.PathForm())
	for _, f := range []*fixture{regex, paths} {
		f.warmTools(b)
	}
	ctx := context.Background()
	decide := func(b *testing.B, f *fixture, calls []decision.Call) {
		TimedByClass(b, func(i int) string {
			d, err := f.eng.Decide(ctx, calls[i])
			if err != nil {
				b.Fatal(err)
			}
			return outcomeClass(d)
		})
	}
	b.Run("M/regex", func(b *testing.B) { decide(b, regex, pathCalls("regex", b.N, regex.w.Call)) })
	b.Run("M/pathWithin", func(b *testing.B) { decide(b, paths, pathCalls("pathWithin", b.N, paths.w.Call)) })
	b.Run("M/tricks", func(b *testing.B) { decide(b, paths, pathCalls("tricks", b.N, paths.w.TrickCall)) })
	// the argument-rule refusals alone (allocs/op is then that class's),
	// the same calls in both forms
	refusals := func(n int) []decision.Call {
		var out []decision.Call
		for len(out) < n {
			for _, c := range pathCalls("refusals", n, paths.w.Call) {
				if d := paths.native.Decide(c); len(out) < n && d.Outcome == decision.Deny && d.Step == decision.StepArgumentRules {
					out = append(out, c)
				}
			}
		}
		return out
	}
	var denies []decision.Call
	b.Run("M/regex-refusals", func(b *testing.B) { denies = refusals(b.N); decide(b, regex, denies) })
	b.Run("M/pathWithin-refusals", func(b *testing.B) {
		if len(denies) != b.N {
			denies = refusals(b.N)
		}
		decide(b, paths, denies)
	})
	b.Run("M/native", func(b *testing.B) {
		calls := pathCalls("native", b.N, paths.w.Call)
		TimedByClass(b, func(i int) string { return outcomeClass(paths.native.Decide(calls[i])) })
	})
}

// TestPathFormDecidesAlike: the path form of M decides M's calls with the
// outcome and step of the regex form, and of the native baseline; on the
// trick calls it denies at the argument rules where the regex form lets
// some through; and on both kinds of calls the embedded engine (its Go
// check of pathWithin) and pure Rego decide whole documents alike.
func TestPathFormDecidesAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the M workload twice")
	}
	w := Generate(M)
	pw := w.PathForm()
	prepare := func(wl *Workload) (*engine.Prepared, engine.Policy) {
		opts, err := wl.Options(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		p := enginePolicy(t, opts)
		eng, err := engine.Prepare(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return eng, p
	}
	regex, _ := prepare(w)
	paths, policy := prepare(pw)
	stock := stockQuery(t, policy, "rego")
	nat, err := NewNative(pw)
	if err != nil {
		t.Fatal(err)
	}
	decide := func(eng *engine.Prepared, call decision.Call, led *engine.Ledger) decision.Decision {
		d, err := eng.Decide(context.Background(), call, led)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	tricksLet, compared := 0, 0
	for i := 0; i < 600; i++ {
		call, led := Variant(i, w.Call(i))
		r, p := decide(regex, call, led), decide(paths, call, led)
		if r.Outcome != p.Outcome || r.Step != p.Step || r.Call != p.Call {
			t.Errorf("call %d (%s): regex form %s/%s, path form %s/%s", i, call.Args["path"], r.Outcome, r.Step, p.Outcome, p.Step)
		}
		trick, _ := Variant(i, pw.TrickCall(i))
		if decide(regex, trick, led).Step != decision.StepArgumentRules {
			tricksLet++
		}
		for _, c := range []decision.Call{call, trick} {
			got := decide(paths, c, led)
			if sweep.Take(i) { // pure Rego is the slow side: a quick run samples it
				compared++
				want := stockDecide(t, stock, c, led)
				if g, w := asJSON(t, got), asJSON(t, want); !reflect.DeepEqual(g, w) {
					gj, _ := json.MarshalIndent(g, "", "  ")
					wj, _ := json.MarshalIndent(w, "", "  ")
					t.Fatalf("call %d (%s): the engine decided\n%s\npure Rego decided\n%s", i, c.Args["path"], gj, wj)
				}
			}
			if n := nat.Decide(c); led.Entries == nil && led.Unreadable == "" && c.Mode == "" && (n.Outcome != got.Outcome || n.Step != got.Step) {
				t.Errorf("call %d (%s): native %s/%s, engine %s/%s", i, c.Args["path"], n.Outcome, n.Step, got.Outcome, got.Step)
			}
		}
		if d := decide(paths, trick, led); d.Outcome != decision.Deny {
			t.Errorf("trick call %d (%s): the path form decided %s/%s", i, trick.Args["path"], d.Outcome, d.Step)
		}
	}
	if tricksLet == 0 {
		t.Error("the regex form refuses every trick: the tricks test nothing")
	}
	t.Logf("600 calls and 600 trick calls: the two forms and the native baseline decide alike; the engine and pure Rego decide %d of them alike (%s); the regex form let %d of the tricks past the argument rules",
		compared, sweep.Describe(600), tricksLet)
}
