package engine

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/decision"
)

// A planned call's refusal decided without an evaluation
// (docs/decisions/0036-planned-refusals-without-an-evaluation.md).
//
// The engine's first query, data.mcpx.common_or_planned, answers a call
// whose only findings can be unknown arguments and argument rules with
// {"planned": plan.document(server, name, mode, readOnlyHint,
// destructiveHint), "facts": tool.facts(server, name), "shadow":
// shadow.on(server)} (rego/mcpx/decision.rego): functions of the config
// and of those five input fields alone. Its conditions read the input
// besides: well_formed, the pin passing (_pin_passes of the server's
// pinTools mode, a function of the config, and of input.tool.pin.status),
// an empty ledger, no override finding (the engine asks this query only
// when the policy has no overrides).
//
// Once an evaluation has answered a planned call, the engine keeps the
// answer by those fields and the pin's status (plannedKey). A later call
// with the same key, an empty ledger and wellFormedCall (which implies the
// Go form of well_formed) has the same answer; the engine then builds the
// two steps' findings in Go before any evaluation. When it finds
// something, neither step's predicate holds on a stock OPA (each holds
// exactly when its step finds nothing), so the common case does not decide
// the call and uncommon_decision's first body does, over that answer: the
// decision buildPlanned assembles. When it finds nothing, or builds
// something inexactly, the call is evaluated as before (the verdicts the
// builder reached are kept for the evaluation's predicates).
// TestPlannedRefusalsWithoutEvaluation compares such decisions with a
// stock OPA's.

// plannedKey is what common_or_planned's planned answer reads of the
// input: the names, the caller's mode, the two annotations plan.document
// takes (0 absent, 1 false, 2 true) and the pin's status ("" and no pin
// when pinning is off).
type plannedKey struct {
	server, tool, mode string
	readOnly, destr    uint8
	pinned             bool
	pinStatus          string
}

func hint(b *bool) uint8 {
	switch {
	case b == nil:
		return 0
	case *b:
		return 2
	}
	return 1
}

func plannedKeyOf(call decision.Call, led *Ledger) plannedKey {
	k := plannedKey{server: call.Server, tool: call.Tool.Name, mode: call.Mode}
	if a := call.Tool.Annotations; a != nil {
		k.readOnly, k.destr = hint(a.ReadOnlyHint), hint(a.DestructiveHint)
	}
	if led != nil && led.Pin != nil {
		k.pinned, k.pinStatus = true, led.Pin.Status
	}
	return k
}

// plannedAnswers keeps the planned answers met, and the common documents
// met (commonAnswer), at most memoSize of each.
type plannedAnswers struct {
	planned kept[planned]
	common  kept[commonAnswer]
}

// commonAnswer is a common document met: the decision less its call, and
// the tool's facts the common_case builtin held on.
type commonAnswer struct {
	d     decision.Decision
	facts ast.Value
}

func newPlannedAnswers() *plannedAnswers {
	return &plannedAnswers{planned: kept[planned]{m: map[plannedKey]planned{}}, common: kept[commonAnswer]{m: map[plannedKey]commonAnswer{}}}
}

// kept is a map of answers by plannedKey, safe for concurrent use; the
// first answer learned for a key stays, and past memoSize keys nothing
// more is learned.
type kept[V any] struct {
	mu sync.RWMutex
	m  map[plannedKey]V
}

func (k *kept[V]) get(key plannedKey) (V, bool) {
	k.mu.RLock()
	v, ok := k.m[key]
	k.mu.RUnlock()
	return v, ok
}

func (k *kept[V]) learn(key plannedKey, v V) {
	k.mu.Lock()
	if _, seen := k.m[key]; !seen && len(k.m) < memoSize {
		k.m[key] = v
	}
	k.mu.Unlock()
}

// ledgerIsEmpty reports whether led makes the input's ledger the one the
// common and planned answers require: {"entries": [], "total": 0}
// (emptyLedger), or none when led is nil.
func ledgerIsEmpty(led *Ledger) bool {
	return led == nil || (led.Unreadable == "" && len(led.Entries) == 0 && led.Total <= 0 && len(led.Budgets) == 0 &&
		led.Labels == nil && led.LabelsError == "")
}

// decidePlanned decides call (input in, without its arguments, which ga
// reads) from a planned answer met before, without an evaluation, when
// the call has findings and everything is built exactly (planned.go);
// otherwise ok is false and the call is evaluated.
func (e *Prepared) decidePlanned(call decision.Call, k plannedKey, in ast.Object, ga *callArgs) (d decision.Decision, ok bool) {
	pl, ok := e.plans.planned.get(k)
	if !ok || !wellFormedCall(call) {
		return decision.Decision{}, false
	}
	ga.lite = true
	defer func() { ga.lite = false }()
	// the Go predicate first: when it holds, the step finds nothing, and
	// the evaluation's predicates read its answer (callArgs.noUnknown)
	noUnknown := noUnknownArgs(ga, in, pl.facts)
	ga.noUnknown = 2
	if noUnknown {
		ga.noUnknown = 1
	}
	f, ok := e.refusals.plannedFindings(call, in, ga, pl, noUnknown)
	if !ok || !f.any() {
		return decision.Decision{}, false
	}
	return e.refusals.assemble(call, pl, f)
}

// learnCommon keeps d, common_document's answer for call, when the
// evaluation's first body answered it: the common_case builtin held (on
// ga.commonFacts) and the ledger is empty, so the body's conditions held;
// a hidden tool's document (the second body) is never kept. d is kept
// without its call.
func (e *Prepared) learnCommon(call decision.Call, led *Ledger, ga *callArgs, d decision.Decision) {
	if e.plans == nil || e.decisions == nil || ga.commonFacts == nil || !ledgerIsEmpty(led) || d.Step == decision.StepHidden {
		return
	}
	d.Call = decision.CallRef{}
	e.plans.common.learn(plannedKeyOf(call, led), commonAnswer{d: cloneDecision(d), facts: ga.commonFacts})
}

// decideCommon decides call (input in, without its arguments, which ga
// reads) from a common document met before, without an evaluation: under
// the same key, with an empty ledger, common_document's first body has the
// same plan and conditions, and it holds when the common_case builtin holds
// on the tool's facts, which decideCommon asks in Go as the evaluation
// would (docs/decisions/0040-common-calls-without-an-evaluation.md).
// Otherwise ok is false, and what the builtin reached is kept for what
// follows (callArgs).
func (e *Prepared) decideCommon(k plannedKey, in ast.Object, ga *callArgs) (d decision.Decision, ok bool) {
	if e.decisions == nil {
		return decision.Decision{}, false
	}
	c, ok := e.plans.common.get(k)
	if !ok {
		return decision.Decision{}, false
	}
	ga.lite = true
	held := e.refusals.preds.commonCase(ga, in, c.facts)
	ga.lite = false
	if !held {
		return decision.Decision{}, false
	}
	return cloneDecision(c.d), true
}

// decideKept decides call from what the engine kept, without an
// evaluation: a common document (decideCommon), else a planned refusal
// (decidePlanned), both only under an empty ledger and read by one key.
func (e *Prepared) decideKept(call decision.Call, led *Ledger, in ast.Object, ga *callArgs) (decision.Decision, bool) {
	if e.plans == nil || !ledgerIsEmpty(led) {
		return decision.Decision{}, false
	}
	k := plannedKeyOf(call, led)
	if d, ok := e.decideCommon(k, in, ga); ok {
		return d, true
	}
	return e.decidePlanned(call, k, in, ga)
}

// unevaluatedKey notes on a context an *int that evaluate counts up when
// it decides a call from a planned answer without an evaluation (the
// tests' hook, export_test.go).
type unevaluatedKey struct{}
