package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// pathURLConfig has rules over pathWithin and urlWithin as operators
// write them, and under not and anyOf, where a Go check that was merely
// stricter than its Rego would accept more: the engine's Go check of these
// keywords must agree with the generated Rego exactly.
const pathURLConfig = `version: 1
policy:
  write: allow
  unknownArgs: "off"
pool:
  argumentRules:
    - id: paths
      tools: ["*"]
      schema:
        patternProperties:
          "^(path|paths|source)$": {pathWithin: [/workspace, 'C:\work']}
    - id: urls
      tools: ["*"]
      argument: url
      schema: {urlWithin: {hosts: [good.com, "*.good.com", 10.0.0.1, "[::1]"], schemes: [https, http]}}
    - id: not-etc
      tools: ["neg"]
      argument: path
      schema: {not: {pathWithin: [/etc]}}
    - id: not-evil
      tools: ["neg"]
      argument: url
      schema: {not: {urlWithin: {hosts: [evil.com]}}}
    - id: a-or-b
      tools: ["either"]
      argument: other
      schema: {anyOf: [{pathWithin: [/a]}, {urlWithin: {hosts: [b.com]}}]}
`

var (
	pathPieces = []string{"/", "/", "//", ".", "..", "workspace", "workspace-evil", "etc", "a", "b", "x y", `\`, "\x00", "\n", "C:", "c:", "work", "é", ":", "?", "NUL", "x."}
	urlPieces  = []string{"https://", "http://", "HTTPS://", "ftp://", "https:", "//", "good.com", "x.good.com", "GOOD.com", "good.com.", "evil.com", "good.com@evil.com", "10.0.0.1", "0x0a.0.0.1", "[::1]", "b.com", "%2e", ":443", ":8443", ":", "/p", "?q=@evil.com", "#f", `\`, " ", "ü"}
)

func draw(rng *rand.Rand, pieces []string, prefixes ...string) string {
	var b strings.Builder
	b.WriteString(prefixes[rng.IntN(len(prefixes))])
	for n := rng.IntN(6); n >= 0; n-- {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// pathURLChecker prepares the harness on pathURLConfig.
func pathURLChecker(t testing.TB) *checker {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "paths.yaml")
	if err := os.WriteFile(cfg, []byte(pathURLConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return newChecker(t, policyOf(t, cfg))
}

// exact requires the engine (the rules predicates answered by santhosh
// with the Go form of the keywords) and Rego to agree on the argument
// rules for call: yes for yes and no for no, not only yes ⇒ yes.
func (c *checker) exact(t testing.TB, call decision.Call) (accepted bool) {
	t.Helper()
	c.check(t, fmt.Sprintf("%v", call.Args), nil, &call, &engine.Ledger{})
	in, err := engine.Input(call, &engine.Ledger{})
	if err != nil {
		t.Fatal(err)
	}
	goRes, err := c.eng.Results(context.Background(), in, &call, &engine.Ledger{})
	if err != nil || len(goRes) != 1 {
		t.Fatalf("engine: %v %v", goRes, err)
	}
	doc, err := ast.JSON(in)
	if err != nil {
		t.Fatal(err)
	}
	regoRes, err := c.stock.Eval(context.Background(), rego.EvalInput(doc))
	if err != nil || len(regoRes) != 1 {
		t.Fatalf("stock: %v %v", regoRes, err)
	}
	g, r := normal(t, goRes[0]), normal(t, regoRes[0].Expressions[0].Value)
	if g["rules_accept"] != r["rules_accept"] || key(g["accepting_packages"]) != key(r["accepting_packages"]) {
		t.Errorf("%s %v: the engine says rules_accept %v (packages %s), Rego %v (packages %s)", call.Tool.Name, call.Args,
			g["rules_accept"], key(g["accepting_packages"]), r["rules_accept"], key(r["accepting_packages"]))
	}
	return g["rules_accept"] == true
}

// TestPathAndURLPredicatesAgreeWithRego: on the tricks and on generated
// paths and URLs, in every rule shape of pathURLConfig, the engine's Go
// check and the Rego accept exactly the same arguments.
func TestPathAndURLPredicatesAgreeWithRego(t *testing.T) {
	if testing.Short() {
		t.Skip("prepares a policy twice")
	}
	c := pathURLChecker(t)
	rng := rand.New(rand.NewPCG(27, 4))
	tools := []string{"plain", "neg", "either"}
	accepted, n := 0, 900
	for i := 0; i < n; i++ {
		p, u := "/workspace/notes.md", "https://x.good.com/a"
		if rng.IntN(3) > 0 {
			p = draw(rng, pathPieces, "/workspace/", "/", "", `C:\work\`, "/etc/", "/a/")
		}
		if rng.IntN(3) > 0 {
			u = draw(rng, urlPieces, "https://good.com", "https://", "http://x.good.com", "")
		}
		args := map[string]any{"path": p, "url": u, "other": []string{p, u}[i%2]}
		if i%3 == 0 {
			args["paths"] = []any{p, "/workspace/ok"}
		}
		if i%5 == 0 {
			args["source"] = 7.0
		}
		if !sweep.Take(i) { // drawn all the same: a quick run checks the same calls as a full one
			continue
		}
		call := decision.Call{Server: "s", Tool: decision.Tool{Name: tools[i%len(tools)]}, Args: args}
		if c.exact(t, call) {
			accepted++
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%s, %d accepted by every rule, the engine and Rego agreeing on each", sweep.Describe(n), accepted)
	if accepted < sweep.Count(n)/20 {
		t.Errorf("only %d of %d calls pass: the generator misses the common case", accepted, sweep.Count(n))
	}
}

// FuzzPathAndURLPredicates: for any path and URL, in every rule shape of
// pathURLConfig, the engine's Go check and the Rego agree exactly:
//
//	go test -run '^$' -fuzz FuzzPathAndURLPredicates -fuzztime 10m -parallel 1 ./internal/engine/
func FuzzPathAndURLPredicates(f *testing.F) {
	for _, seed := range [][2]string{
		{"/workspace/notes.md", "https://good.com/"},
		{"/workspace/../etc/passwd", "https://good.com@evil.com/"},
		{"/workspace-evil/x", "https://good.com./"},
		{`C:\work\..\x`, "https://0x0a.0.0.1/"},
		{"/etc/x", "https://evil.com/"},
		{"/a/b", "https://b.com/"},
	} {
		f.Add(seed[0], seed[1], uint8(0))
	}
	c := pathURLChecker(f)
	f.Fuzz(func(t *testing.T, p, u string, sel uint8) {
		args := map[string]any{"path": p, "url": u, "other": []string{p, u}[sel%2], "paths": []any{p, u}}
		tool := []string{"plain", "neg", "either"}[int(sel/2)%3]
		call := decision.Call{Server: "s", Tool: decision.Tool{Name: tool}, Args: args}
		if _, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args); err != nil {
			return // no canonical form (invalid UTF-8): the engine denies before asking
		}
		c.exact(t, call)
	})
}
