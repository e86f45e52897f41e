package engine

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// reusePolicy is a small policy of its own (a module no other test
// prepares), built afresh on every call: equal, never the same maps.
func reusePolicy(tag string) Policy {
	return Policy{
		Modules: map[string]string{"p.rego": testPolicy + "\n# " + tag + "\n"},
		Data: map[string]any{"config": map[string]any{"servers": map[string]any{"a": map[string]any{}, "b": map[string]any{}}},
			"n": json.Number("1"), "l": []any{"x", 1.5, nil, true}},
		Schemas:  map[string]any{"rules.r": map[string]any{"type": "object"}},
		Revision: "r1",
	}
}

// TestPrepareReusesAnEqualPolicy: a second Prepare of an equal policy —
// one after the other, or many at once — answers the first one's
// Prepared, which decides as a fresh compile does.
func TestPrepareReusesAnEqualPolicy(t *testing.T) {
	ctx := context.Background()
	a, err := Prepare(ctx, reusePolicy(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Prepare(ctx, reusePolicy(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("an equal policy prepared again was compiled again")
	}
	fresh, err := prepare(ctx, reusePolicy(t.Name()), settings{query: decisionQuery, memoFunctions: true})
	if err != nil {
		t.Fatal(err)
	}
	da, err := b.Decide(ctx, testCall, &Ledger{})
	if err != nil {
		t.Fatal(err)
	}
	df, err := fresh.Decide(ctx, testCall, &Ledger{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(da, df) {
		t.Errorf("the reused policy decides %+v, a fresh compile %+v", da, df)
	}

	// many at once: one compile, one answer
	var wg sync.WaitGroup
	got := make([]*Prepared, 6)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = Prepare(ctx, reusePolicy(t.Name()+" at once"))
		}()
	}
	wg.Wait()
	for i, p := range got {
		if p == nil || p != got[0] {
			t.Fatalf("Prepare %d of one policy at once: %p, first %p", i, p, got[0])
		}
	}
}

// TestPolicyDigestCoversEveryField: changing anything Prepare reads — a
// module's name or text, any data or schema value, its Go type, invalid
// bytes JSON would fold together, the revision, an option — changes the
// digest (a missed one would answer another policy's Prepared).
func TestPolicyDigestCoversEveryField(t *testing.T) {
	t.Parallel()
	// a field added to Policy or settings must be digested (and a case
	// added below)
	if n := reflect.TypeOf(Policy{}).NumField(); n != 4 {
		t.Fatalf("Policy has %d fields: digest the new one in policyDigest", n)
	}
	if n := reflect.TypeOf(settings{}).NumField(); n != 2 {
		t.Fatalf("settings has %d fields: digest the new one in policyDigest", n)
	}
	base := func() (Policy, settings) {
		p := reusePolicy("digest")
		p.Modules["q.rego"] = "package q\n"
		p.Data["b"] = "\xffa"
		p.Data["s"] = []string{"x"}
		p.Data["i"] = 1
		return p, settings{query: decisionQuery, memoFunctions: true}
	}
	p0, s0 := base()
	k0, ok := policyDigest(p0, s0)
	if !ok {
		t.Fatal("the base policy is not digested")
	}
	mutations := map[string]func(p *Policy, s *settings){
		"module text": func(p *Policy, _ *settings) { p.Modules["q.rego"] = "package q \n" },
		"module name": func(p *Policy, _ *settings) { delete(p.Modules, "q.rego"); p.Modules["r.rego"] = "package q\n" },
		"module moved": func(p *Policy, _ *settings) {
			p.Modules["q.rego"], p.Modules["p.rego"] = p.Modules["p.rego"], p.Modules["q.rego"]
		},
		"module added":    func(p *Policy, _ *settings) { p.Modules["z.rego"] = "" },
		"revision":        func(p *Policy, _ *settings) { p.Revision = "r2" },
		"query":           func(_ *Policy, s *settings) { s.query = "data.mcpx.other" },
		"memo":            func(_ *Policy, s *settings) { s.memoFunctions = false },
		"number text":     func(p *Policy, _ *settings) { p.Data["n"] = json.Number("1.0") },
		"number type":     func(p *Policy, _ *settings) { p.Data["n"] = 1.0 },
		"int type":        func(p *Policy, _ *settings) { p.Data["i"] = int64(1) },
		"string number":   func(p *Policy, _ *settings) { p.Data["n"] = "1" },
		"invalid bytes":   func(p *Policy, _ *settings) { p.Data["b"] = "\xfea" },
		"list item":       func(p *Policy, _ *settings) { p.Data["l"] = []any{"x", 1.5, nil, false} },
		"list nil":        func(p *Policy, _ *settings) { p.Data["l"] = []any{"x", 1.5, false, nil} },
		"string list":     func(p *Policy, _ *settings) { p.Data["s"] = []any{"x"} },
		"key moved":       func(p *Policy, _ *settings) { p.Data["m"] = p.Data["l"]; delete(p.Data, "l") },
		"empty map":       func(p *Policy, _ *settings) { p.Data["e"] = map[string]any{} },
		"nil vs empty":    func(p *Policy, _ *settings) { p.Data["e"] = nil },
		"schema":          func(p *Policy, _ *settings) { p.Schemas["rules.r"] = map[string]any{"type": "array"} },
		"schema to data":  func(p *Policy, _ *settings) { p.Data["rules.r"] = p.Schemas["rules.r"]; p.Schemas = map[string]any{} },
		"no schemas":      func(p *Policy, _ *settings) { p.Schemas = nil },
		"text across two": func(p *Policy, _ *settings) { p.Modules["q.rego"] = "package"; p.Modules["r.rego"] = " q\n" },
	}
	seen := map[[32]byte]string{k0: "base"}
	for name, m := range mutations {
		p, s := base()
		m(&p, &s)
		k, ok := policyDigest(p, s)
		if !ok {
			t.Errorf("%s: not digested", name)
			continue
		}
		if other, dup := seen[k]; dup {
			t.Errorf("%s: same digest as %s", name, other)
		}
		seen[k] = name
	}
	// a value of another Go type is never digested: that policy is
	// compiled each time
	p, s := base()
	p.Data["t"] = struct{ X int }{1}
	if _, ok := policyDigest(p, s); ok {
		t.Error("a struct value was digested")
	}
	p, s = base()
	p.Modules["big.rego"] = strings.Repeat("#", reuseMaxBytes)
	if _, ok := policyDigest(p, s); ok {
		t.Error("a policy larger than reuseMaxBytes was digested")
	}
}

// TestPrepareKeepsOnlyTheLastPolicy: a Prepared no engine uses any more
// is let go, except the last one prepared; a failed compile is not kept.
func TestPrepareKeepsOnlyTheLastPolicy(t *testing.T) {
	ctx := context.Background()
	def := settings{query: decisionQuery, memoFunctions: true}
	k1, _ := policyDigest(reusePolicy(t.Name()), def)
	k2, _ := policyDigest(reusePolicy(t.Name()+" other"), def)
	if _, err := Prepare(ctx, reusePolicy(t.Name())); err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(ctx, reusePolicy(t.Name()+" other")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		runtime.GC()
	}
	if reused.alive(k1) {
		t.Error("a policy no engine uses is still held")
	}
	// (no other test runs beside this one: it is not parallel)
	if !reused.alive(k2) {
		t.Error("the last policy prepared was let go")
	}

	bad := Policy{Modules: map[string]string{"p.rego": "package mcpx\n\ndecision := \n"}}
	for range 2 {
		if _, err := Prepare(ctx, bad); err == nil || !strings.Contains(err.Error(), "p.rego:") {
			t.Fatalf("a module that does not parse: %v", err)
		}
	}
	if k, _ := policyDigest(bad, def); reused.has(k) {
		t.Error("a failed compile is kept")
	}
}

// has says whether the cache lists key.
func (r *reuseCache) has(key [32]byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if e.key == key {
			return true
		}
	}
	return false
}

// alive says whether the cache can still answer key's Prepared.
func (r *reuseCache) alive(key [32]byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if e.key == key {
			select {
			case <-e.done:
				return e.p.Value() != nil
			default:
				return false
			}
		}
	}
	return false
}
