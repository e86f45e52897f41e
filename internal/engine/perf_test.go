package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/decision"
)

// testPolicy is a small stand-in for the real policy: one input-dependent
// decision built on a data-only rule (the server count) and a function.
const testPolicy = `package mcpx

servers := count(data.mcpx.config.servers)

_label(s) := sprintf("%s of %d", [s, servers])

default decision := {"outcome": "deny", "step": "input", "reasons": [{"code": "PolicyError", "step": "input", "message": "no"}], "warnings": [], "write": true, "destructive": true, "call": {"server": "", "tool": ""}}

decision := {
	"outcome": "ask",
	"step": "write_mode",
	"reasons": [{"code": "WriteNeedsConfirmation", "step": "write_mode", "message": _label(input.server),
	             "details": {"n": servers, "set": {"b", "a"}, "entries": count(input.ledger.entries), "big": 12345678901234567890}}],
	"warnings": [],
	"write": true,
	"destructive": false,
	"call": {"server": input.server, "tool": input.tool.name, "sha256": input.call_sha256},
} if input.server != ""
`

func prepareTest(t *testing.T, src string) *Prepared {
	t.Helper()
	e, err := Prepare(context.Background(), Policy{
		// the test's own policy: a Prepare of an equal one would share its
		// caches (reuse.go)
		Modules:  map[string]string{"p.rego": src + "\n# " + t.Name() + "\n"},
		Data:     map[string]any{"config": map[string]any{"servers": map[string]any{"a": map[string]any{}, "b": map[string]any{}}}},
		Revision: "r1",
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

var testCall = decision.Call{Server: "fs", Tool: decision.Tool{Name: "write_file"}, Args: map[string]any{"path": "/x"}}

func TestDecisionCacheReturnsEqualIndependentCopies(t *testing.T) {
	t.Parallel()
	e := prepareTest(t, testPolicy)
	ctx := context.Background()
	first, err := e.Decide(ctx, testCall, &Ledger{})
	if err != nil {
		t.Fatal(err)
	}
	if first.First().Message != "fs of 2" || first.Call.SHA256 == "" {
		t.Fatalf("unexpected decision %+v", first)
	}
	if len(e.decisions.items) != 1 {
		t.Fatalf("cache holds %d decisions, want 1", len(e.decisions.items))
	}
	// the caller may change its copy; the cache must not see it
	first.Reasons[0].Details["n"] = "changed"
	first.Reasons[0].Message = "changed"
	second, err := e.Decide(ctx, testCall, &Ledger{})
	if err != nil {
		t.Fatal(err)
	}
	if second.First().Message != "fs of 2" || second.Reasons[0].Details["n"] != float64(2) {
		t.Fatalf("cached decision was changed through a returned copy: %+v", second.Reasons[0])
	}
	// a different ledger is a different key
	led := &Ledger{Entries: []decision.LedgerEntry{{ID: "e1", Server: "fs", Tool: "write_file"}}}
	third, err := e.Decide(ctx, testCall, led)
	if err != nil {
		t.Fatal(err)
	}
	if third.Reasons[0].Details["entries"] != float64(1) || len(e.decisions.items) != 2 {
		t.Fatalf("ledger change did not change the decision or key: %+v (%d cached)", third.Reasons[0].Details, len(e.decisions.items))
	}
	// so is a different tool description
	call := testCall
	call.Tool.Annotations = &decision.Annotations{Title: "x"}
	if _, err := e.Decide(ctx, call, &Ledger{}); err != nil {
		t.Fatal(err)
	}
	if len(e.decisions.items) != 3 {
		t.Fatalf("annotation change reused a cached decision (%d cached)", len(e.decisions.items))
	}
}

func TestDecisionCacheOffForNondeterministicPolicy(t *testing.T) {
	t.Parallel()
	e := prepareTest(t, testPolicy+"\nnow := time.now_ns()\n")
	if e.decisions != nil {
		t.Fatal("a policy that calls time.now_ns got a decision cache")
	}
	if _, err := e.Decide(context.Background(), testCall, &Ledger{}); err != nil {
		t.Fatal(err)
	}
}

func TestDecisionCacheEvictsOldest(t *testing.T) {
	t.Parallel()
	c := newDecisionCache(2)
	k := func(b byte) cacheKey { return cacheKey{b} }
	c.put(k(1), decision.Decision{Step: "1"})
	c.put(k(2), decision.Decision{Step: "2"})
	c.put(k(3), decision.Decision{Step: "3"})
	if _, ok := c.get(k(1)); ok {
		t.Error("the oldest decision was not evicted")
	}
	for _, b := range []byte{2, 3} {
		if d, ok := c.get(k(b)); !ok || string(d.Step) != string('0'+rune(b)) {
			t.Errorf("decision %d: %v %v", b, d, ok)
		}
	}
}

func TestMemoLearnsOnlyDataOnlyRules(t *testing.T) {
	t.Parallel()
	e := prepareTest(t, testPolicy)
	if !e.memo.isEligible(ast.MustParseRef("data.mcpx.servers")) {
		t.Error("data.mcpx.servers (data only) is not eligible for the memo")
	}
	// decision reads input (its default does not, but the path is shared);
	// _label is a function
	for _, ref := range []ast.Ref{ast.MustParseRef("data.mcpx.decision"), ast.MustParseRef("data.mcpx._label").Append(ast.StringTerm("a"))} {
		if e.memo.isEligible(ref) {
			t.Errorf("%s is eligible for the memo", ref)
		}
	}
	for _, server := range []string{"a", "b", "c"} {
		call := testCall
		call.Server = server
		d, err := e.Decide(context.Background(), call, &Ledger{})
		if err != nil {
			t.Fatal(err)
		}
		if want := server + " of 2"; d.First().Message != want {
			t.Errorf("message %q, want %q", d.First().Message, want)
		}
	}
	ref := ast.MustParseRef("data.mcpx.servers")
	v, ok := e.memo.get(ref)
	if !ok || v.term == nil || !v.term.Equal(ast.IntNumberTerm(2)) {
		t.Errorf("memo for %v: %v %v", ref, v.term, ok)
	}
	if e.memo.values.Len() != 1 {
		t.Errorf("memo holds %d values, want only data.mcpx.servers", e.memo.values.Len())
	}
}

// TestFromTermMatchesParse checks that reading the decision straight from
// the ast.Value gives what the JSON round trip (Parse) gives, including
// the free-form fields, sets, nulls and errors.
func TestFromTermMatchesParse(t *testing.T) {
	t.Parallel()
	docs := []string{
		`{"outcome": "allow", "step": "", "reasons": [], "warnings": [], "write": false, "destructive": false, "call": {"server": "s", "tool": "t", "sha256": "ab"}}`,
		`{"outcome": "deny", "step": "argument_rules", "reasons": [{"code": "ArgumentRuleViolation", "step": "argument_rules", "message": "m",
		  "violations": [{"path": "/a", "value": {"x": [1, 2.5, "s", null, true]}, "constraint": "type", "expected": 1e3, "detail": "d",
		                  "rule": {"id": "r", "origin": "f:1", "description": "x"}}],
		  "details": {"n": 3, "nested": {"k": [0.1]}, "set": {"z", "a"}}, "extra": "ignored"}], "warnings": null, "write": true, "destructive": true, "call": {"server": "s", "tool": "t"}}`,
		`{"outcome": "ask", "step": "write_mode", "reasons": [{"code": "WriteNeedsConfirmation", "step": "write_mode", "message": "m", "details": null}], "warnings": [{"code": "IgnoredArguments", "step": "unknown_args", "message": "w"}], "write": true, "destructive": false, "call": null}`,
		`{"outcome": "allow", "step": "", "reasons": [], "warnings": [], "write": true, "destructive": true, "call": {"server": "s", "tool": "t"},
		  "shadow": {"outcome": "deny", "step": "argument_rules", "reasons": [{"code": "ArgumentRuleViolation", "step": "argument_rules", "message": "m", "details": {"n": 1}}]}}`,
		`{"outcome": "deny", "step": "hidden", "reasons": [{"code": "HiddenTool", "step": "hidden", "message": "m"}], "shadow": {"outcome": "deny", "step": "hidden", "reasons": [{"code": "HiddenTool", "step": "hidden", "message": "m"}]}}`,
		`{"outcome": "allow", "reasons": [], "shadow": {"outcome": "allow", "step": "", "reasons": null}}`,
		`{"outcome": "allow", "reasons": [], "shadow": {"outcome": "deny", "reasons": []}}`,
		`{"outcome": "allow", "reasons": [], "shadow": {"outcome": "deny", "reasons": [{"code": "NoSuchCode", "message": "x"}]}}`,
		`{"outcome": "ask", "reasons": [{"code": "WriteNeedsConfirmation"}], "shadow": {"outcome": "deny", "reasons": [{"code": "WriteDenied"}]}}`,
		`{"outcome": "allow", "reasons": [{"code": "WriteDenied"}], "shadow": {"outcome": "deny", "reasons": [{"code": "WriteDenied"}]}}`,
		`{"outcome": "allow", "reasons": [], "shadow": "deny"}`,
		`{"outcome": "maybe", "reasons": []}`,
		`{"outcome": "deny", "reasons": []}`,
		`{"outcome": "deny", "reasons": [{"code": "NoSuchCode", "message": "x"}]}`,
		`{"outcome": "allow", "write": "yes"}`,
		`{"outcome": "allow", "reasons": [{"code": "IgnoredArguments", "details": {"big": 1e400}}]}`,
		`{"outcome": 1}`,
		`[]`,
	}
	for _, doc := range docs {
		v := ast.MustParseTerm(doc).Value
		got, gerr := fromTerm(v)
		// what the previous conversion did: ast → JSON text → Parse
		j, err := ast.JSON(v)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		want, werr := Parse(raw)
		if (gerr == nil) != (werr == nil) {
			t.Errorf("%s:\nfromTerm error %v, Parse error %v", doc, gerr, werr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\nfromTerm %#v\nParse    %#v", doc, got, want)
		}
	}
}

// TestMemoFollowsIndirectReads: rules that reach input-dependent rules
// through a prefix of data, a variable key or walk are not data-only.
func TestMemoFollowsIndirectReads(t *testing.T) {
	t.Parallel()
	e, err := Prepare(context.Background(), Policy{
		Modules: map[string]string{
			"sub.rego": "package mcpx.sub\n\nserver := input.server\n\nconst := 1\n",
			"p.rego": `package mcpx

whole := data.mcpx.sub

dyn := [v | some k; v := data.mcpx.sub[k]]

walked := [x | walk(data.mcpx.sub, x)]

pure := data.mcpx.sub.const + count(data.mcpx.config.servers)

decision := {"outcome": "ask", "step": "write_mode", "warnings": [], "write": true, "destructive": false,
	"reasons": [{"code": "WriteNeedsConfirmation", "step": "write_mode", "message": sprintf("%v %v %d %d", [whole.server, dyn, count(walked), pure])}],
	"call": {"server": input.server, "tool": input.tool.name, "sha256": input.call_sha256}}
`,
		},
		Data: map[string]any{"config": map[string]any{"servers": map[string]any{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"data.mcpx.whole", "data.mcpx.dyn", "data.mcpx.walked", "data.mcpx.sub.server"} {
		if e.memo.isEligible(ast.MustParseRef(p)) {
			t.Errorf("%s reaches input but is eligible for the memo", p)
		}
	}
	for _, p := range []string{"data.mcpx.pure", "data.mcpx.sub.const"} {
		if !e.memo.isEligible(ast.MustParseRef(p)) {
			t.Errorf("%s is data only but not eligible for the memo", p)
		}
	}
	for _, server := range []string{"a", "b", "a"} {
		call := testCall
		call.Server = server
		call.Args = map[string]any{"n": server + "x"} // distinct calls: no decision-cache hit
		d, err := e.Decide(context.Background(), call, &Ledger{})
		if err != nil {
			t.Fatal(err)
		}
		if want := server + ` [1, "` + server + `"] 3 1`; d.First().Message != want {
			t.Errorf("server %s: message %q, want %q", server, d.First().Message, want)
		}
	}
}

// TestMemoKeepsMarkedPureFunctions: a function marked custom.memo is
// memoized per arguments when it is pure; an unmarked function, or a marked
// one that reads input, never is; past the cap nothing more is learned and
// decisions stay right.
func TestMemoKeepsMarkedPureFunctions(t *testing.T) {
	t.Parallel()
	e, err := Prepare(context.Background(), Policy{
		Modules: map[string]string{"p.rego": `package mcpx

# METADATA
# custom:
#   memo: true
label(s) := sprintf("%s of %d", [s, count(data.mcpx.config.servers)])

# METADATA
# custom:
#   memo: true
impure(s) := concat("/", [s, input.tool.name])

plain(s) := upper(s)

decision := {"outcome": "ask", "step": "write_mode", "warnings": [], "write": true, "destructive": false,
	"reasons": [{"code": "WriteNeedsConfirmation", "step": "write_mode", "message": sprintf("%s %s %s", [label(input.server), impure(input.server), plain(input.server)])}],
	"call": {"server": input.server, "tool": input.tool.name, "sha256": input.call_sha256}}
`},
		Data: map[string]any{"config": map[string]any{"servers": map[string]any{"a": map[string]any{}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	fn := func(name, arg string) ast.Ref {
		return ast.Ref{ast.RefTerm(ast.MustParseRef("data.mcpx." + name)...), ast.StringTerm(arg)}
	}
	if !e.memo.isEligible(fn("label", "a")) {
		t.Error("label (marked, pure) is not eligible")
	}
	for _, name := range []string{"impure", "plain"} {
		if e.memo.isEligible(fn(name, "a")) {
			t.Errorf("%s is eligible", name)
		}
	}
	e.memo.limit = 2
	for i, server := range []string{"a", "b", "a", "c", "c"} {
		call := testCall
		call.Server = server
		call.Args = map[string]any{"i": i} // distinct calls: no decision-cache hit
		d, err := e.Decide(context.Background(), call, &Ledger{})
		if err != nil {
			t.Fatal(err)
		}
		up := map[string]string{"a": "A", "b": "B", "c": "C"}[server]
		if want := server + " of 1 " + server + "/write_file " + up; d.First().Message != want {
			t.Errorf("call %d: message %q, want %q", i, d.First().Message, want)
		}
	}
	for _, arg := range []string{"a", "b"} {
		if v, ok := e.memo.get(fn("label", arg)); !ok || !v.term.Equal(ast.StringTerm(arg+" of 1")) {
			t.Errorf("label(%q) not memoized: %v %v", arg, v.term, ok)
		}
	}
	if _, ok := e.memo.get(fn("label", "c")); ok {
		t.Error(`label("c") was learned past the cap`)
	}
	if n := e.memo.values.Len(); n != 2 {
		t.Errorf("memo holds %d values, want 2", n)
	}
}

// testKey is the key Decide computes for call.
func testKey(revision string, call decision.Call, led *Ledger) (cacheKey, bool) {
	return makeKey(revision, call, newToolSchema(call.Tool.InputSchema), led, digestCall(call))
}

// TestCacheKeyCoversEveryField: changing any field the policy can read
// changes the decision-cache key (a missed field would be a wrong hit).
func TestCacheKeyCoversEveryField(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	base := func() (decision.Call, *Ledger) {
		return decision.Call{
			Surface: "mcp", Server: "fs", Mode: "ask",
			Tool: decision.Tool{Name: "t", Annotations: &decision.Annotations{Title: "T", ReadOnlyHint: &no},
				InputSchema: map[string]any{"type": "object"}},
			Args:      map[string]any{"n": json.Number("1"), "l": []any{"a", 1.5, nil, true}, "b": "\xffa"},
			Principal: &decision.Principal{ID: "p", Groups: []string{"g"}},
		}, &Ledger{Entries: []decision.LedgerEntry{{ID: "1", Server: "fs", Tool: "t", ArgsSHA256: "a", Time: "x", Surface: "cli"}}}
	}
	c0, l0 := base()
	k0, ok := testKey("r1", c0, l0)
	if !ok {
		t.Fatal("base call not cacheable")
	}
	mutations := map[string]func(c *decision.Call, l **Ledger) string{
		"revision":         func(*decision.Call, **Ledger) string { return "r2" },
		"surface":          func(c *decision.Call, _ **Ledger) string { c.Surface = "cli"; return "r1" },
		"server":           func(c *decision.Call, _ **Ledger) string { c.Server = "git"; return "r1" },
		"mode":             func(c *decision.Call, _ **Ledger) string { c.Mode = "deny"; return "r1" },
		"tool name":        func(c *decision.Call, _ **Ledger) string { c.Tool.Name = "u"; return "r1" },
		"no annotations":   func(c *decision.Call, _ **Ledger) string { c.Tool.Annotations = nil; return "r1" },
		"title":            func(c *decision.Call, _ **Ledger) string { c.Tool.Annotations.Title = "U"; return "r1" },
		"readOnlyHint":     func(c *decision.Call, _ **Ledger) string { c.Tool.Annotations.ReadOnlyHint = &yes; return "r1" },
		"readOnlyHint nil": func(c *decision.Call, _ **Ledger) string { c.Tool.Annotations.ReadOnlyHint = nil; return "r1" },
		"destructiveHint":  func(c *decision.Call, _ **Ledger) string { c.Tool.Annotations.DestructiveHint = &no; return "r1" },
		"idempotentHint":   func(c *decision.Call, _ **Ledger) string { c.Tool.Annotations.IdempotentHint = &no; return "r1" },
		"openWorldHint":    func(c *decision.Call, _ **Ledger) string { c.Tool.Annotations.OpenWorldHint = &yes; return "r1" },
		"nil schema":       func(c *decision.Call, _ **Ledger) string { c.Tool.InputSchema = nil; return "r1" },
		"empty schema":     func(c *decision.Call, _ **Ledger) string { c.Tool.InputSchema = map[string]any{}; return "r1" },
		"number text":      func(c *decision.Call, _ **Ledger) string { c.Args["n"] = json.Number("1.0"); return "r1" },
		"number type":      func(c *decision.Call, _ **Ledger) string { c.Args["n"] = 1.0; return "r1" },
		"list item":        func(c *decision.Call, _ **Ledger) string { c.Args["l"] = []any{"a", 1.5, nil, false}; return "r1" },
		"invalid bytes":    func(c *decision.Call, _ **Ledger) string { c.Args["b"] = "\xfea"; return "r1" }, // canonical: both "\ufffda"
		"int type":         func(c *decision.Call, _ **Ledger) string { c.Args["n"] = 1; return "r1" },
		"key moved": func(c *decision.Call, _ **Ledger) string {
			c.Args = map[string]any{"n": json.Number("1"), "m": []any{"a", 1.5, nil, true}, "b": "\xffa"}
			return "r1"
		},
		"principal":     func(c *decision.Call, _ **Ledger) string { c.Principal = nil; return "r1" },
		"principal id":  func(c *decision.Call, _ **Ledger) string { c.Principal.ID = "q"; return "r1" },
		"groups":        func(c *decision.Call, _ **Ledger) string { c.Principal.Groups = []string{"g", "h"}; return "r1" },
		"no ledger":     func(_ *decision.Call, l **Ledger) string { *l = nil; return "r1" },
		"unreadable":    func(_ *decision.Call, l **Ledger) string { (*l).Unreadable = "x"; return "r1" },
		"no entries":    func(_ *decision.Call, l **Ledger) string { (*l).Entries = nil; return "r1" },
		"entry id":      func(_ *decision.Call, l **Ledger) string { (*l).Entries[0].ID = "2"; return "r1" },
		"entry server":  func(_ *decision.Call, l **Ledger) string { (*l).Entries[0].Server = "git"; return "r1" },
		"entry tool":    func(_ *decision.Call, l **Ledger) string { (*l).Entries[0].Tool = "u"; return "r1" },
		"entry args":    func(_ *decision.Call, l **Ledger) string { (*l).Entries[0].ArgsSHA256 = "b"; return "r1" },
		"entry time":    func(_ *decision.Call, l **Ledger) string { (*l).Entries[0].Time = "y"; return "r1" },
		"entry surface": func(_ *decision.Call, l **Ledger) string { (*l).Entries[0].Surface = "mcp"; return "r1" },
		"string split":  func(c *decision.Call, _ **Ledger) string { c.Server = "f"; c.Tool.Name = "st"; return "r1" },
	}
	for name, mutate := range mutations {
		c, l := base()
		rev := mutate(&c, &l)
		k, ok := testKey(rev, c, l)
		if !ok || k == k0 {
			t.Errorf("%s: key unchanged (ok %v)", name, ok)
		}
	}
	c1, l1 := base()
	c1.Tool.InputSchema = nil
	c2, l2 := base()
	c2.Tool.InputSchema = map[string]any{}
	if k1, _ := testKey("r1", c1, l1); k1 == func() cacheKey { k, _ := testKey("r1", c2, l2); return k }() {
		t.Error("no inputSchema and an empty one share a key")
	}
	if c, l := base(); true {
		c.Args["x"] = struct{}{}
		if _, ok := testKey("r1", c, l); ok {
			t.Error("a non-JSON argument is cacheable")
		}
	}
}

// TestMemoSkipsLargeArguments: a memoized function's value is not kept for
// arguments larger than memoKeyBytes, and decisions stay the same.
func TestMemoSkipsLargeArguments(t *testing.T) {
	t.Parallel()
	e := prepareTest(t, `package mcpx

# METADATA
# custom:
#   memo: true
size(x) := count(x)

decision := {"outcome": "ask", "step": "write_mode", "warnings": [], "write": true, "destructive": false,
	"reasons": [{"code": "WriteNeedsConfirmation", "step": "write_mode", "message": sprintf("%d", [size(input.args.s)])}],
	"call": {"server": input.server, "tool": input.tool.name, "sha256": input.call_sha256}}
`)
	for _, n := range []int{10, memoKeyBytes + 1} {
		call := testCall
		call.Args = map[string]any{"s": strings.Repeat("x", n)}
		d, err := e.Decide(context.Background(), call, &Ledger{})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint(n); d.First().Message != want {
			t.Errorf("message %q, want %q", d.First().Message, want)
		}
	}
	if n := e.memo.values.Len(); n != 1 {
		t.Errorf("memo holds %d values, want 1 (the small argument's)", n)
	}
}

// TestSchemaCacheIsContentAddressed: a tool's inputSchema is converted once
// per content; a schema changed in place (same map) is converted again,
// never served stale.
func TestSchemaCacheIsContentAddressed(t *testing.T) {
	t.Parallel()
	e := prepareTest(t, `package mcpx

decision := {"outcome": "ask", "step": "write_mode", "warnings": [], "write": true, "destructive": false,
	"reasons": [{"code": "WriteNeedsConfirmation", "step": "write_mode", "message": concat(",", sort(object.keys(input.tool.inputSchema.properties)))}],
	"call": {"server": input.server, "tool": input.tool.name, "sha256": input.call_sha256}}
`)
	schema := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{}}}
	for i, want := range []string{"a", "a", "a,b"} {
		if i == 2 {
			schema["properties"].(map[string]any)["b"] = map[string]any{}
		}
		call := testCall
		call.Tool.InputSchema = schema
		call.Args = map[string]any{"i": i} // no decision-cache hit
		d, err := e.Decide(context.Background(), call, &Ledger{})
		if err != nil {
			t.Fatal(err)
		}
		if d.First().Message != want {
			t.Errorf("call %d: message %q, want %q", i, d.First().Message, want)
		}
	}
	if n := len(e.schemas.values); n != 2 {
		t.Errorf("schema cache holds %d schemas, want 2", n)
	}
}
