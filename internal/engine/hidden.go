package engine

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/decision"
)

// A call to a hidden tool decided without an evaluation
// (docs/decisions/0034-hidden-tools-decided-in-go.md).
//
// The decision's common query (common_document, rego/mcpx/decision.rego)
// decides a call to a hidden tool by its second body: the value of
// lib.plan.hidden_common(server, name) — a memoized function of the config
// alone — whose document is the decision when the input is well formed
// (predicates.well_formed) and the pin passes (_pin_passes of the plan's
// pin mode). Its first body cannot decide such a call: lib.plan.document
// needs `not f.hidden` of the same facts hidden_common needs f.hidden of.
//
// Once an evaluation has decided a call to a tool as hidden, the engine
// keeps that plan (the memo's value of hidden_common for the server and
// name, decoded once); a later call to the tool is decided from it in Go
// (DecideHidden) when the same two conditions hold: the pin passes, read
// as the input would carry it, and wellFormedCall, which implies the Go
// form of well_formed the evaluation asks. Neither reads the ledger, the
// budgets' counts or the session's labels, so the Engine does not read
// them for such a call. Otherwise the call is evaluated as before. The
// decision is the one the evaluation would return: the same document,
// decoded by the same fromTerm, with the call's server, tool and hash.
// TestHiddenToolsInGo compares it with a stock OPA's under every ledger
// the engine builds.

// hiddenPlan is a hidden tool's plan: its decision document decoded (no
// call) and the server's pinTools mode.
type hiddenPlan struct {
	doc     decision.Decision
	pinMode string
}

// serverTool names a tool of a server.
type serverTool struct{ server, name string }

// hiddenPlans keeps the plans of hidden tools met, at most memoSize.
type hiddenPlans struct {
	mu    sync.RWMutex
	plans map[serverTool]*hiddenPlan
}

func newHiddenPlans() *hiddenPlans { return &hiddenPlans{plans: map[serverTool]*hiddenPlan{}} }

func (h *hiddenPlans) get(server, name string) *hiddenPlan {
	h.mu.RLock()
	p := h.plans[serverTool{server, name}]
	h.mu.RUnlock()
	return p
}

// hiddenCommonRef is the function whose memoized value is a hidden tool's
// plan (OPA keys a function's value by [function ref, arguments…]).
var hiddenCommonRef = ast.MustParseRef("data.mcpx.lib.plan.hidden_common")

// learnHidden keeps the plan of call's tool after an evaluation decided
// the call as hidden: the memo's value of hidden_common for its server
// and name, when it holds one of the expected shape.
func (e *Prepared) learnHidden(call decision.Call) {
	if e.common == nil || e.hidden == nil {
		return
	}
	k := serverTool{call.Server, call.Tool.Name}
	if e.hidden.get(k.server, k.name) != nil {
		return
	}
	v, ok := e.memo.get(ast.Ref{ast.NewTerm(hiddenCommonRef), ast.StringTerm(k.server), ast.StringTerm(k.name)})
	if !ok || v.term == nil {
		return
	}
	obj, ok := v.term.Value.(ast.Object)
	if !ok {
		return
	}
	m, ok := field(obj, kPinMode).(ast.String)
	if !ok {
		return
	}
	doc := field(obj, kDocument)
	if doc == nil {
		return
	}
	d, err := fromTerm(doc)
	if err != nil || d.Outcome != decision.Deny || d.Step != decision.StepHidden || d.Call != (decision.CallRef{}) {
		return
	}
	e.hidden.mu.Lock()
	if len(e.hidden.plans) < memoSize {
		e.hidden.plans[k] = &hiddenPlan{doc: d, pinMode: string(m)}
	}
	e.hidden.mu.Unlock()
}

var (
	kPinMode  = ast.StringTerm("pin_mode")
	kDocument = ast.StringTerm("document")
)

// pinPasses is _pin_passes(mode) (decision.rego) on the pin the input
// carries (input.tool.pin, none when pin is nil).
func pinPasses(mode string, pin *Pin) bool {
	switch mode {
	case "off":
		return true
	case "ask", "deny":
		return pin != nil && (pin.Status == "ok" || pin.Status == "new")
	}
	return false
}

// DecideHidden decides call, whose tool's pin status pin is as the input
// would carry it (nil when pinning is off), when the engine has met the
// tool hidden before and the evaluation would decide the call by the
// tool's plan (hidden.go): then ok, and the decision is the evaluation's
// whatever the call's ledger, budgets and labels, which that decision
// does not read. Otherwise ok is false and Decide decides. Safe for
// concurrent use.
func (e *Prepared) DecideHidden(ctx context.Context, call decision.Call, pin *Pin) (d decision.Decision, ok bool) {
	if e.hidden == nil || ctx.Err() != nil {
		return decision.Decision{}, false
	}
	p := e.hidden.get(call.Server, call.Tool.Name)
	if p == nil || !pinPasses(p.pinMode, pin) || !wellFormedCall(call) {
		return decision.Decision{}, false
	}
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		return decision.Decision{}, false
	}
	d = cloneDecision(p.doc) // each decision owns its reasons (the caller may change them)
	d.Call = decision.CallRef{Server: call.Server, Tool: call.Tool.Name, SHA256: sum}
	if seen, ok := ctx.Value(builtKey{}).(*bool); ok {
		*seen = true
	}
	return d, true
}

// wellFormedCall reports that wellFormed holds on the input the
// evaluation would read for call (inputWithoutArgs with the arguments
// left to the predicates, a hash, any ledger the engine builds): the
// names are not empty, the caller's mode is one the policy knows, the
// tool's inputSchema converts (jsonGo) and the arguments are plain
// (plainGo). The ledger the engine builds always passes (objects for
// entries, a total of plain digits), and so do the tool's annotations,
// the surface, the principal and the hash. Stricter than wellFormed: a
// no leaves the call to the evaluation.
func wellFormedCall(call decision.Call) bool {
	if call.Server == "" || call.Tool.Name == "" {
		return false
	}
	switch call.Mode {
	case "", "ask", "allow", "deny":
	default:
		return false
	}
	if call.Tool.InputSchema != nil && !jsonGo(call.Tool.InputSchema, 0) {
		return false
	}
	return plainGo(call.Args, 0)
}

// jsonGo reports whether the converter (value) converts v without an
// error: decoded JSON's Go types and Go numbers only, at most maxDepth
// deep.
func jsonGo(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string, json.Number, float64, int, int64:
		return true
	case []any:
		for _, e := range x {
			if !jsonGo(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !jsonGo(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
